"""Score history: every gate run and metric score in SQLite (default) or PostgreSQL."""

from .audits import AuditRecord
from .schema import SCHEMA_VERSION
from .store import DEFAULT_SQLITE_FILE, ENV_URL, HistoryStore, RunRecord, resolve_url

__all__ = [
    "AuditRecord",
    "DEFAULT_SQLITE_FILE",
    "ENV_URL",
    "HistoryStore",
    "RunRecord",
    "SCHEMA_VERSION",
    "resolve_url",
]
