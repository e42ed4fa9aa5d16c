"""Score history: every gate run and metric score in SQLite (default) or PostgreSQL."""

from .schema import SCHEMA_VERSION
from .store import DEFAULT_SQLITE_FILE, ENV_URL, HistoryStore, RunRecord, resolve_url

__all__ = ["DEFAULT_SQLITE_FILE", "ENV_URL", "HistoryStore", "RunRecord", "SCHEMA_VERSION", "resolve_url"]
