"""Copies in disguise through every surface: exact copies whose numeric columns went through an
invertible map (×1000, +7, standardised, one column negated, levels permuted with ×1000 numerics)
and honest releases with 1 % or 5 % of their records permuted-level copies, gated by the default
gate through the CLI with and without a holdout, and through the bundled Dagster job (its checks
fail, nothing is published). The honest release passes both ways."""

from __future__ import annotations

import dagster as dg
import polars as pl
import pytest

from privgate.baselines import disguised_copy, transformed_copy, with_copies
from privgate.data import load_example

WHOLE = {  # every record disguised: blocked (2) or refused (3)
    "scaled": dict(numeric="scaled"),
    "shifted": dict(numeric="shifted"),
    "standardised": dict(numeric="standardised"),
    "negated-age": dict(numeric="negated", columns=["age"]),
    "permuted-scaled": dict(numeric="scaled", labels="permuted", seed=3),
}
MINORITY = {"permuted-1pct": 0.01, "permuted-5pct": 0.05}  # flagged: warn, block or refused


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    full = load_example()
    real, holdout = full.head(1500), full.tail(1500)
    honest = load_example("adult_holdout").head(1500)
    d = tmp_path_factory.mktemp("transforms")
    real.write_parquet(d / "real.parquet")
    holdout.write_parquet(d / "holdout.parquet")
    honest.write_parquet(d / "honest.parquet")
    for name, kw in WHOLE.items():
        transformed_copy(real, **kw).write_parquet(d / f"{name}.parquet")
    permuted = disguised_copy(real, "permuted", seed=2)
    for name, share in MINORITY.items():
        with_copies(honest, permuted, share, seed=1).write_parquet(d / f"{name}.parquet")
    return d


def _gate(d, name: str, holdout: bool) -> int:
    from privgate.cli import main

    return main(
        [
            "gate",
            "--real",
            str(d / "real.parquet"),
            "--synthetic",
            str(d / f"{name}.parquet"),
            *(["--holdout", str(d / "holdout.parquet")] if holdout else []),
            "--release-id",
            "r",
            "--no-history",
            "--quiet",
            "--format",
            "json",
        ]
    )


@pytest.mark.parametrize("holdout", [True, False], ids=["holdout", "no-holdout"])
def test_the_cli_blocks_every_transformed_copy_and_flags_a_disguised_minority(files, holdout):
    codes = {name: _gate(files, name, holdout) for name in (*WHOLE, *MINORITY, "honest")}
    assert codes["honest"] == 0, codes
    assert all(codes[name] in (2, 3) for name in WHOLE), codes
    assert all(codes[name] in (1, 2, 3) for name in MINORITY), codes


def test_the_dagster_job_fails_the_checks_and_publishes_no_transformed_copy(files, tmp_path):
    """The bundled pipeline with the default gate and the holdout: the permuted, ×1000 copy fails
    its blocking checks and is not published; the honest release is."""
    import shutil

    from privgate.dagster.definitions import build_definitions
    from privgate.dagster.rule_checks import DECISION_CHECK
    from privgate.gates import DEFAULT_CONFIG_PATH

    root = tmp_path / "data"
    (root / "releases").mkdir(parents=True)
    shutil.copy(files / "real.parquet", root / "real.parquet")
    for name in ("permuted-scaled", "honest"):
        shutil.copy(files / f"{name}.parquet", root / "releases" / f"{name}.parquet")
    defs = build_definitions(
        data_dir=root,
        gate_config=DEFAULT_CONFIG_PATH,
        holdout_path=files / "holdout.parquet",
        history_url=f"sqlite:///{tmp_path / 'history.sqlite'}",
        executor="in_process",
        sensor_settle_seconds=0,
        env={},
    )
    with dg.instance_for_test() as instance:
        out = {}
        for rid in ("permuted-scaled", "honest"):
            instance.add_dynamic_partitions("releases", [rid])
            out[rid] = defs.resolve_job_def("evaluate_release").execute_in_process(
                instance=instance, partition_key=rid, raise_on_error=False
            )
    mats = {rid: {e.asset_key.to_user_string() for e in r.get_asset_materialization_events()} for rid, r in out.items()}
    checks = {rid: {e.check_name: e for e in r.get_asset_check_evaluations()} for rid, r in out.items()}
    assert not out["permuted-scaled"].success and "published_release" not in mats["permuted-scaled"]
    assert not checks["permuted-scaled"][DECISION_CHECK].passed
    failed = [
        n for n, e in checks["permuted-scaled"].items() if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR
    ]
    assert any(n.startswith("label_free") for n in failed), failed
    assert out["honest"].success and "published_release" in mats["honest"]
    assert pl.read_parquet(root / "published" / "honest.parquet").height == 1500
