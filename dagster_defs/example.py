"""Deprecated: ``python -m privgate.dagster.example`` (this name works for one more release)."""

import sys

from privgate.dagster.example import main  # noqa: F401 - imported by the package shim's warning

if __name__ == "__main__":
    sys.exit(main())
