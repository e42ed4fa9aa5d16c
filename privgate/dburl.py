"""Database URLs: one form, ``postgresql://user@host:5432/db``, wherever privgate takes a database.

SQLAlchemy reads a bare ``postgresql://`` (or ``postgres://``) URL as "use psycopg2" and fails
with ``No module named 'psycopg2'`` when only another driver is installed, and refuses
``postgres://`` outright. :func:`sqlalchemy_url` maps both to the PostgreSQL driver that is
installed (psycopg2 from the ``[postgres]`` extra first, then psycopg 3) and, when none is, raises
an error naming the extra to install. A URL that names its driver
(``postgresql+psycopg2://``) is kept as written, and checked the same way. Other URLs
(``sqlite:///``, ``mysql+pymysql://``, ...) pass through unchanged.
"""

from __future__ import annotations

import importlib.util

from .errors import HistoryError, PrivgateError

# SQLAlchemy dialect suffix → importable module of that PostgreSQL driver, in order of preference
POSTGRES_DRIVERS: tuple[tuple[str, str], ...] = (("psycopg2", "psycopg2"), ("psycopg", "psycopg"), ("pg8000", "pg8000"))
_BARE_SCHEMES = ("postgresql", "postgres")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def postgres_driver() -> str | None:
    """The dialect suffix of the first installed PostgreSQL driver, or None."""
    return next((name for name, module in POSTGRES_DRIVERS if _installed(module)), None)


def sqlalchemy_url(url: str, *, extra: str = "postgres", error: type[PrivgateError] = HistoryError) -> str:
    """``url`` with a bare PostgreSQL scheme mapped to the installed driver (module docstring).

    ``extra`` names the install extra(s) the error message asks for (``"gx,postgres"`` for a GX
    SQL table); ``error`` is the privgate error class raised when no driver is installed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    base, _, driver = scheme.partition("+")
    if base.lower() not in _BARE_SCHEMES:
        return url
    if driver:
        module = dict(POSTGRES_DRIVERS).get(driver.lower(), driver.lower())
        if not _installed(module):
            raise error(
                f"database URL: the driver {driver!r} named in the URL scheme {scheme!r} is not "
                f"installed; install privgate[{extra}] (psycopg2) and use postgresql://..., "
                f"or install {module}"
            )
        return f"postgresql+{driver}://{rest}"
    found = postgres_driver()
    if found is None:
        raise error(
            f"database URL: {scheme}:// needs a PostgreSQL driver and none is installed; "
            f"install privgate[{extra}] (pip install 'privgate[{extra}]')"
        )
    return f"postgresql+{found}://{rest}"
