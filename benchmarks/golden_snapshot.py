"""A golden snapshot of privgate's numbers on the bundled example, to show a refactor changed none.

On the bundled Adult sample (``privgate.data.load_example("adult_sample")``) and its holdout, for
the three releases ``privgate demo`` gates (``privgate.commands.demo.make_releases``: independent
marginals, the same with 0.5 % exact copies, a noisy copy), it records

* every registered metric's value, raw value, interval, p-value, holdout baseline and excess with
  their intervals, details, per-attribute values and a digest of the per-record risks
  (``privgate.evaluate`` with ``baseline=True``, seed 0, one thread, no memory check);
* the default gate's decision and, per check, metric, rule, verdict, the compared quantity and
  its threshold (``privgate.gates.run_gate`` with ``default_gate_config``).

Floats are rounded to 12 significant digits and wall times dropped, so two runs of the same code
give the same file.

    python benchmarks/golden_snapshot.py --write /tmp/golden_before.json    # before a change
    python benchmarks/golden_snapshot.py --check /tmp/golden_before.json    # after it: 0 differences

``--check`` prints the number of differences (and the first few paths), exit status 1 when any.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

SIGNIFICANT = 12
# keys whose values are wall times or otherwise vary between identical runs
VOLATILE_KEYS = ("seconds", "elapsed", "wall", "created_at", "run_id", "privgate_version")
# disclosure needs quasi-identifiers; reconstruction, inference and disclosure a sensitive column
KEYS = ["age", "sex", "race", "marital_status"]
SENSITIVE = ["income"]


def _round(x: float) -> float | str:
    """``x`` rounded to :data:`SIGNIFICANT` significant digits; non-finite floats as strings
    (JSON has no NaN)."""
    if not math.isfinite(x):
        return repr(x)
    if x == 0.0:
        return 0.0
    return float(f"{x:.{SIGNIFICANT - 1}e}")


def _volatile(key: str) -> bool:
    return any(v in key.lower() for v in VOLATILE_KEYS)


def normalise(obj: Any) -> Any:
    """``obj`` as JSON values: floats rounded (:func:`_round`), arrays and tuples as lists, keys
    as strings, wall-time entries (:data:`VOLATILE_KEYS`) dropped."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): normalise(v) for k, v in obj.items() if not _volatile(str(k))}
    if isinstance(obj, (list, tuple)):
        return [normalise(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [normalise(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _round(float(obj))
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


def _digest(values: Any) -> str | None:
    """A digest of per-record risks rounded like every other float (none: None)."""
    import numpy as np

    if values is None:
        return None
    rounded = [_round(float(v)) for v in np.asarray(values, dtype=np.float64).ravel()]
    return hashlib.sha256(json.dumps(rounded).encode()).hexdigest()[:16]


def _result(res: Any) -> dict[str, Any]:
    """One metric result's numbers (``MetricResult.to_dict`` without wall time) and its
    per-record digest."""
    out = res.to_dict()
    out["per_record_digest"] = _digest(res.per_record)
    return normalise(out)


def snapshot(seed: int = 0) -> dict[str, Any]:
    """The snapshot: per release, every registered metric's result and the default gate's checks."""
    import privgate
    from privgate.commands.demo import make_releases
    from privgate.data import load_example
    from privgate.gates import default_gate_config, run_gate

    real = load_example("adult_sample")
    holdout = load_example("adult_holdout")
    metrics = privgate.metric_names()
    cfg = default_gate_config("golden")
    out: dict[str, Any] = {"metrics": metrics, "releases": {}}
    for release_id, synthetic in make_releases(real, seed=seed).items():
        report = privgate.evaluate(
            real,
            synthetic,
            metrics,
            holdout=holdout,
            keys=KEYS,
            sensitive=SENSITIVE,
            pairing=True,
            baseline=True,
            seed=seed,
            on_error="record",
            threads=1,
            memory_limit=None,
        )
        outcome = run_gate(cfg, real, synthetic, holdout=holdout, release_id=release_id, record=False, threads=1)
        out["releases"][release_id] = {
            "results": {name: _result(res) for name, res in report.results.items()},
            "errors": normalise(report.errors),
            "gate": {
                "decision": str(outcome.decision),
                "exit_code": outcome.exit_code,
                "checks": [
                    normalise(
                        {
                            "metric": c.metric,
                            "rule": c.rule,
                            "verdict": c.verdict,
                            "on": c.on,
                            "compared": c.compared,
                            "threshold": c.threshold,
                            "severity": c.severity,
                            "skipped": c.skipped,
                        }
                    )
                    for c in outcome.checks
                ],
                "results": {name: _result(res) for name, res in outcome.results.items()},
            },
        }
    return out


def differences(before: Any, after: Any, path: str = "") -> list[str]:
    """Paths at which ``after`` differs from ``before`` (a missing or extra key, a different
    length or value), each with what it was and is."""
    if isinstance(before, dict) and isinstance(after, dict):
        diffs = []
        for key in list(before) + [k for k in after if k not in before]:
            where = f"{path}/{key}"
            if key not in after:
                diffs.append(f"{where}: missing")
            elif key not in before:
                diffs.append(f"{where}: new")
            else:
                diffs.extend(differences(before[key], after[key], where))
        return diffs
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{path}: length {len(before)} -> {len(after)}"]
        return [d for i, (b, a) in enumerate(zip(before, after)) for d in differences(b, a, f"{path}[{i}]")]
    if before != after or type(before) is not type(after):
        return [f"{path}: {before!r} -> {after!r}"]
    return []


def main(argv: list[str] | None = None) -> int:
    """Write (``--write``) or compare with (``--check``) a golden snapshot."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--write", metavar="PATH", help="write the snapshot of this code to PATH")
    what.add_argument("--check", metavar="PATH", help="compare this code's snapshot with PATH")
    ap.add_argument("--seed", type=int, default=0, help="seed of the releases and the metrics (default 0)")
    ap.add_argument("--show", type=int, default=20, help="differences to print with --check (default 20)")
    args = ap.parse_args(argv)
    os.environ.setdefault("PRIVGATE_THREADS", "1")
    snap = snapshot(args.seed)
    if args.write:
        Path(args.write).write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
        n = sum(len(r["results"]) for r in snap["releases"].values())
        print(f"wrote {args.write}: {len(snap['releases'])} releases, {n} metric results")
        return 0
    before = json.loads(Path(args.check).read_text())
    diffs = differences(before, json.loads(json.dumps(snap)))
    for d in diffs[: args.show]:
        print(d)
    print(f"{len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
