"""Writes this project's Great Expectations suites from its gate configurations.

    python3 expectations/build.py            # rewrite the suite files
    python3 expectations/build.py --check    # exit 1 when a file differs from what the code builds

Each suite is :func:`privgate.gx.suite_from_gate_config` of one gate configuration, its real
data and holdout left as suite parameters (``privgate_real``, ``privgate_holdout``: give them
as ``expectation_parameters`` when validating), so one file serves every run.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
#: suite file → the gate configuration it is built from (relative to the repository)
SUITES = {"default_gate.json": "privgate/configs/default_gate.yaml"}
PARAMETERS = {"real": {"$PARAMETER": "privgate_real"}, "holdout": {"$PARAMETER": "privgate_holdout"}}


def build_suite(file_name: str) -> Any:
    """The GX suite of ``file_name`` as the code builds it."""
    import privgate.gx as pe
    from privgate.gates import load_gate_config

    source = SUITES[file_name]
    cfg = dataclasses.replace(load_gate_config(REPO / source), source=source)
    return pe.suite_from_gate_config(cfg, name=Path(file_name).stem, **PARAMETERS)


def build(file_name: str) -> dict[str, Any]:
    """The JSON of the suite of ``file_name`` as the code builds it."""
    return json.loads(json.dumps(build_suite(file_name).to_json_dict()))


def main(argv: list[str]) -> int:
    import privgate.gx as pe

    stale = []
    for file_name in SUITES:
        path = HERE / file_name
        if "--check" not in argv:
            pe.save_suite_json(build_suite(file_name), path)
        elif not path.exists() or json.loads(path.read_text(encoding="utf-8")) != build(file_name):
            stale.append(file_name)
    if stale:
        print(f"out of date: {', '.join(stale)} (run python3 expectations/build.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
