"""Agreement of privgate's three attacks with anonymeter 1.1 on the bundled Adult sample.

real = privgate's bundled Adult sample (3,000 rows), control = the bundled holdout (3,000 other
Adult rows), release = a seeded noisy copy of the sample (privgate.baselines.noisy_copy: a
memorising generator, moderate risk in all three attacks) and a release of independent
marginals (no joint structure: risk ≈ 0 for linkability and inference). anonymeter fails on
nulls (linkability: a numba TypingError, inference: "boolean value of NA is ambiguous"), so
rows with a null are dropped from every frame for BOTH tools; privgate also runs on the frames
with nulls (reported, not compared).

anonymeter pins an old NumPy, so it runs in its own throw-away virtual environment:

    python3 -m venv /tmp/anonvenv && /tmp/anonvenv/bin/pip install 'anonymeter==1.1.*'
    PYTHONPATH=$PWD python3 benchmarks/anonymeter_agreement.py --anonymeter-python /tmp/anonvenv/bin/python

This file is also the anonymeter side (``--anonymeter-side SPEC.json``, run by that venv's
python): it reads the frames from Parquet, runs anonymeter's evaluators and prints JSON.

Agreement criteria per attack: (1) anonymeter's risk inside privgate's interval AND privgate's
risk inside anonymeter's interval; (2) the MOVER interval of the difference of the two risks
(privgate.stats.difference_interval) contains 0. The two tools draw different random targets and
predicates, and (linkability, inference) measure distance differently (docs/attacks.md), so
agreement is statistical, not numerical identity: even two runs of the SAME definition with
independent draws and equal interval widths meet criterion (1) only about 83 % of the time
(|X − Y| < 1.96·σ for X − Y with standard deviation √2·σ), and criterion (2) about 95 %.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


# ----------------------------------------------------------------------------- anonymeter side
def anonymeter_side(spec_path: str) -> None:
    """Run anonymeter on the frames named in the spec; print one JSON object per attack."""
    import numpy as np
    import pandas as pd
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
    from anonymeter.evaluators import singling_out_evaluator as so_module

    spec = json.loads(Path(spec_path).read_text())
    ori, syn, control = (pd.read_parquet(spec[k]) for k in ("real", "synthetic", "holdout"))
    seed, n_jobs = int(spec["seed"]), int(spec.get("n_jobs", 2))
    out: dict[str, Any] = {}
    for name, p in spec["attacks"].items():
        np.random.seed(seed)  # pandas .sample() draws from the global state
        so_module.rng = np.random.default_rng(seed)  # anonymeter's module-level generator
        start = time.perf_counter()
        try:
            if name == "singling_out":
                ev = SinglingOutEvaluator(
                    ori=ori,
                    syn=syn,
                    control=control,
                    n_attacks=p["n_attacks"],
                    n_cols=p["n_cols"],
                    max_attempts=p.get("max_attempts", 10_000_000),
                )
                ev.evaluate(mode=p["mode"])
            elif name == "linkability":
                ev = LinkabilityEvaluator(
                    ori=ori,
                    syn=syn,
                    control=control,
                    n_attacks=p["n_attacks"],
                    aux_cols=tuple(p["aux_cols"]),
                    n_neighbors=p["n_neighbors"],
                )
                ev.evaluate(n_jobs=n_jobs)
            else:
                ev = InferenceEvaluator(
                    ori=ori,
                    syn=syn,
                    control=control,
                    n_attacks=p["n_attacks"],
                    aux_cols=p["aux_cols"],
                    secret=p["secret"],
                )
                ev.evaluate(n_jobs=n_jobs)
            res = ev.results()
            risk = res.risk()
            out[name] = {
                "risk": risk.value,
                "ci": list(risk.ci),
                "attack_rate": res.attack_rate.value,
                "control_rate": res.control_rate.value,
                "baseline_rate": res.baseline_rate.value,
                "seconds": time.perf_counter() - start,
            }
        except Exception as exc:  # noqa: BLE001 - reported, the other attacks still run
            out[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "seconds": time.perf_counter() - start}
    print(json.dumps(out))


def run_anonymeter(
    python: str, frames: dict[str, Any], attacks: dict[str, dict], seed: int, n_jobs: int = 2
) -> dict[str, Any]:
    """Write the (Polars) frames to Parquet, run this file's anonymeter side with ``python``,
    return its JSON. Threads are limited to ``n_jobs`` for a fair comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        spec: dict[str, Any] = {"seed": seed, "n_jobs": n_jobs, "attacks": attacks}
        for role, frame in frames.items():
            path = Path(tmp) / f"{role}.parquet"
            frame.write_parquet(path)
            spec[role] = str(path)
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        env = dict(
            os.environ,
            OMP_NUM_THREADS=str(n_jobs),
            NUMBA_NUM_THREADS=str(n_jobs),
            OPENBLAS_NUM_THREADS=str(n_jobs),
            MKL_NUM_THREADS=str(n_jobs),
        )
        proc = subprocess.run(
            [python, __file__, "--anonymeter-side", str(spec_path)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"anonymeter side failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- privgate side
def run_privgate(frames: dict[str, Any], attacks: dict[str, dict], seed: int) -> dict[str, Any]:
    import privgate

    out = {}
    for name, p in attacks.items():
        start = time.perf_counter()
        res = getattr(privgate.metrics, name)(
            frames["real"], frames["synthetic"], holdout=frames["holdout"], seed=seed, **p
        )
        d = res.details
        out[name] = {
            "risk": res.value,
            "ci": list(res.ci),
            "attack_rate": d["attack_rate"],
            "control_rate": d["control_rate"],
            "baseline_rate": d["baseline_rate"],
            "seconds": time.perf_counter() - start,
        }
    return out


def attack_specs(columns: list[str], n_attacks: int, secret: str) -> dict[str, dict]:
    """The same attack definitions for both tools: multivariate singling out over 3 columns;
    linkability of the first half of the columns against the second; inference of ``secret``
    from every other column."""
    half = (len(columns) + 1) // 2
    others = [c for c in columns if c != secret]
    return {
        "singling_out": {"mode": "multivariate", "n_cols": 3, "n_attacks": n_attacks},
        "linkability": {"aux_cols": [columns[:half], columns[half:]], "n_neighbors": 1, "n_attacks": n_attacks},
        "inference": {"secret": secret, "aux_cols": others, "n_attacks": n_attacks},
    }


def _inside(x: float, ci: list[float], slack: float = 1e-9) -> bool:
    return ci[0] - slack <= x <= ci[1] + slack


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--anonymeter-side", help=argparse.SUPPRESS)
    ap.add_argument("--anonymeter-python", default="/tmp/anonvenv/bin/python")
    ap.add_argument("--n-attacks", type=int, default=500, help="anonymeter's default (500)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = ap.parse_args()
    if args.anonymeter_side:
        anonymeter_side(args.anonymeter_side)
        return 0

    import privgate
    from privgate.data import load_example

    real_all, hold_all = load_example("adult_sample"), load_example("adult_holdout")
    releases = {
        "noisy_copy": privgate.baselines.noisy_copy(real_all, seed=11),
        "independent_marginals": privgate.baselines.independent_marginals(real_all, seed=11),
    }
    specs = attack_specs(real_all.columns, args.n_attacks, "income")
    from privgate.stats import difference_interval

    rows, agree, agree_diff, total = [], 0, 0, 0
    for release, syn_all in releases.items():
        frames = {"real": real_all.drop_nulls(), "synthetic": syn_all.drop_nulls(), "holdout": hold_all.drop_nulls()}
        with_nulls = run_privgate({"real": real_all, "synthetic": syn_all, "holdout": hold_all}, specs, 0)
        for seed in args.seeds:
            pg = run_privgate(frames, specs, seed)
            an = run_anonymeter(args.anonymeter_python, frames, specs, seed)
            for name in specs:
                a, p = an[name], pg[name]
                if "error" in a:
                    rows.append((release, seed, name, p, None, a["error"]))
                    continue
                ok = _inside(a["risk"], p["ci"]) and _inside(p["risk"], a["ci"])
                diff_ci = difference_interval(p["risk"], tuple(p["ci"]), a["risk"], tuple(a["ci"]))
                ok_diff = _inside(0.0, list(diff_ci))
                agree += ok
                agree_diff += ok_diff
                total += 1
                rows.append(
                    (
                        release,
                        seed,
                        name,
                        p,
                        a,
                        ("agree" if ok else "DISAGREE") + " / " + ("difference ok" if ok_diff else "DIFFERENCE ≠ 0"),
                    )
                )
        print(
            f"\n{release}: rows without nulls real {frames['real'].height}, release {frames['synthetic'].height}, "
            f"holdout {frames['holdout'].height}; privgate on the frames WITH nulls: "
            + ", ".join(f"{n} {r['risk']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]" for n, r in with_nulls.items())
        )
    print(f"\nn_attacks = {args.n_attacks}; rates are Wilson centres (attack / control / naive baseline)")
    print(
        f"{'release':<22}{'seed':>4}  {'attack':<13} {'privgate risk [95% CI]':<26} {'anonymeter risk [95% CI]':<26}"
        f" {'pg a/c/b':<18} {'an a/c/b':<18} result"
    )
    for release, seed, name, p, a, verdict in rows:
        ps = f"{p['risk']:.3f} [{p['ci'][0]:.3f}, {p['ci'][1]:.3f}]"
        prates = f"{p['attack_rate']:.3f}/{p['control_rate']:.3f}/{p['baseline_rate']:.3f}"
        if a is None:
            print(f"{release:<22}{seed:>4}  {name:<13} {ps:<26} {'error':<26} {prates:<18} {'':<18} {verdict}")
            continue
        an_s = f"{a['risk']:.3f} [{a['ci'][0]:.3f}, {a['ci'][1]:.3f}]"
        arates = f"{a['attack_rate']:.3f}/{a['control_rate']:.3f}/{a['baseline_rate']:.3f}"
        print(f"{release:<22}{seed:>4}  {name:<13} {ps:<26} {an_s:<26} {prates:<18} {arates:<18} {verdict}")
    print(
        f"\nagreement (each risk inside the other's interval): {agree} of {total}; "
        f"difference interval containing 0: {agree_diff} of {total}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
