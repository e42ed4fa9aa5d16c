"""Every command of docs/audit.md and docs/audit-generators.md run exactly as written, passing
audits included at their documented run counts (minutes: the test suite's version,
``tests/audit/test_audit_docs.py``, cuts a passing audit's runs). Prints each document's wall
time and fails (exit 1) on the first command whose exit code is not the documented one.

    python3 benchmarks/audit_docs.py
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import time
from pathlib import Path

TEST = Path(__file__).resolve().parents[1] / "tests" / "audit" / "test_audit_docs.py"


def main() -> int:
    spec = importlib.util.spec_from_file_location("test_audit_docs", TEST)
    docs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(docs)
    for name, _, commands in docs.documented():
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            try:
                docs.run_documented(name, Path(folder), None)
            except AssertionError as failed:
                print(f"{name}: FAILED\n{failed}")
                return 1
        print(f"{name}: {len(commands)} commands as documented, {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
