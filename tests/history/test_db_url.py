"""One PostgreSQL URL form: ``postgresql://`` (and ``postgres://``) maps to the installed driver,
and with no driver the error names the extra to install."""

from __future__ import annotations

import os

import pytest

from privgate import dburl
from privgate.errors import HistoryError, InputError
from privgate.history import HistoryStore, resolve_url

PG_URL = os.environ.get("PRIVGATE_TEST_POSTGRES_URL")


def _only(monkeypatch, installed: set[str]) -> None:
    monkeypatch.setattr(dburl, "_installed", lambda module: module in installed)


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "POSTGRESQL"])
def test_bare_scheme_maps_to_the_first_installed_driver(monkeypatch, scheme):
    _only(monkeypatch, {"psycopg2", "psycopg"})
    assert dburl.sqlalchemy_url(f"{scheme}://u@h:5432/db") == "postgresql+psycopg2://u@h:5432/db"
    _only(monkeypatch, {"psycopg"})
    assert dburl.sqlalchemy_url(f"{scheme}://u@h/db") == "postgresql+psycopg://u@h/db"


def test_other_urls_pass_unchanged(monkeypatch):
    _only(monkeypatch, set())
    for url in ("sqlite:///x.sqlite", "mysql+pymysql://u@h/db", "no-scheme", "postgresqlx://a"):
        assert dburl.sqlalchemy_url(url) == url


def test_no_driver_error_names_the_extra(monkeypatch):
    _only(monkeypatch, set())
    with pytest.raises(HistoryError, match=r"privgate\[postgres\]"):
        resolve_url("postgresql://u:secret@h/db")
    with pytest.raises(InputError, match=r"privgate\[gx,postgres\]"):
        dburl.sqlalchemy_url("postgresql://u@h/db", extra="gx,postgres", error=InputError)
    # a named driver that is missing is named, and the extra too
    with pytest.raises(HistoryError, match=r"'psycopg2'.*privgate\[postgres\]") as info:
        HistoryStore("postgresql+psycopg2://u:secret@h/db")
    assert "secret" not in str(info.value)


def test_named_driver_kept_when_installed(monkeypatch):
    _only(monkeypatch, {"psycopg2"})
    assert resolve_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"


def test_the_installed_driver_is_found():
    """psycopg2 is installed here (the [postgres] extra): a bare URL resolves to it."""
    pytest.importorskip("psycopg2")
    assert resolve_url("postgresql://u@h/db") == "postgresql+psycopg2://u@h/db"


def test_bare_url_opens_a_real_store():
    if not PG_URL:
        pytest.skip("PRIVGATE_TEST_POSTGRES_URL not set")
    bare = "postgresql://" + PG_URL.split("://", 1)[1]
    store = HistoryStore(bare)
    assert store.engine.dialect.name == "postgresql"
    store.engine.dispose()
