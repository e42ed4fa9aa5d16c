"""Open the privgate pipeline in the Dagster UI on the bundled example::

    python -m privgate.dagster.example            # then open http://127.0.0.1:3000

Prepares ``./privgate-dagster-example/`` -- the bundled UCI Adult sample as the real data, the
bundled holdout, and the three releases of ``privgate demo`` (made with ``privgate.baselines``:
one passes, one warns, one is blocked) in the watched ``releases/`` folder -- and starts
``dagster dev`` (webserver + daemon) with a local SQLite instance (telemetry off) and a SQLite
score history. The release sensor is on: within a few seconds it adds the three releases as
partitions and runs the gate on each; the UI shows the checks (the blocked release's failed
ERROR check stops its publication), the metric plots across releases and the report paths.

The code location also has the generator audit example (``example_generator_audit``, one
partition per version of a Laplace-histogram generator; materialise a version to audit it).

``--prepare-only`` writes the folder and prints the environment instead of starting Dagster.
Stop ``dagster dev`` with Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

DATASET = "adult-dagster-example"


def prepare(out: Path, *, seed: int = 0) -> dict[str, str]:
    """Write the example folder under ``out``; return the environment for ``dagster dev``."""
    from privgate.commands.demo import make_releases
    from privgate.data import example_path, load_example

    out = out.absolute()
    releases = out / "releases"
    releases.mkdir(parents=True, exist_ok=True)
    for release_id, frame in make_releases(load_example("adult_sample"), seed=seed).items():
        target = releases / f"{release_id}.parquet"
        if not target.exists():  # releases are immutable once the sensor has seen them
            tmp = releases / f".{release_id}.parquet.tmp"
            frame.write_parquet(tmp)
            os.replace(tmp, target)
    home = out / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text(
        "# written by python -m privgate.dagster.example (see deploy/local/dagster.yaml)\n"
        f"storage:\n  sqlite:\n    base_dir: {home}\n"
        "concurrency:\n  runs:\n    max_concurrent_runs: 2\n"
        "  pools:\n    granularity: run\n    default_limit: 1\n"
        "telemetry:\n  enabled: false\n"
        "nux:\n  enabled: false\n",
        encoding="utf-8",
    )
    return {
        "DAGSTER_HOME": str(home),
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PRIVGATE_DAGSTER_DATA_DIR": str(out),
        "PRIVGATE_REAL_PATH": str(example_path("adult_sample")),
        "PRIVGATE_HOLDOUT_PATH": str(example_path("adult_holdout")),
        "PRIVGATE_DATASET": DATASET,
        "PRIVGATE_HISTORY_URL": f"sqlite:///{out / 'history.sqlite'}",
        "PRIVGATE_SENSOR_INTERVAL": "10",
        "PRIVGATE_SENSOR_SETTLE": "0",
        "PRIVGATE_SENSOR_STATUS": "running",
        "PRIVGATE_EXAMPLE_AUDIT": "1",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m privgate.dagster.example",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--dir", default="privgate-dagster-example", help="example folder (default ./privgate-dagster-example)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="webserver host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=3000, help="webserver port (default 3000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the example releases")
    parser.add_argument(
        "--prepare-only", action="store_true", help="write the folder and print the environment; do not start Dagster"
    )
    args = parser.parse_args(argv)
    env = prepare(Path(args.dir), seed=args.seed)
    if args.prepare_only:
        for k, v in env.items():
            print(f"export {k}={v}")
        print("dagster dev -m privgate.dagster")
        return 0
    dagster = shutil.which("dagster")
    if dagster is None:
        print("error: the 'dagster' command is not on PATH; install privgate first (pip install -e .)", file=sys.stderr)
        return 2
    print(
        f"privgate example in {Path(args.dir).absolute()}; Dagster UI on "
        f"http://{args.host}:{args.port} (Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    os.execve(
        dagster,
        [dagster, "dev", "-m", "privgate.dagster", "-h", args.host, "-p", str(args.port)],
        {**os.environ, **env},
    )
    return 0  # pragma: no cover - execve does not return


if __name__ == "__main__":
    sys.exit(main())
