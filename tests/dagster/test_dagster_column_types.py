"""Every column type Polars reads, through the Dagster checks of ``build_privgate_checks`` with the
default gate: one table holding all the gated types at once (Boolean, Date, Datetime with and
without a time zone, Duration, Time, Decimal, Categorical, Enum, Int8, UInt16, nulls) is gated —
an honest release is not blocked; a copy of the real records is recognised record for record
(common_rows, every typed cell compared as it is) and blocked — and a type privgate cannot
compare fails the decision check with a message naming the column and its type."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl

from privgate.dagster import PrivgateResource, build_privgate_checks
from privgate.dagster.rule_checks import DECISION_CHECK

DEFAULT_GATE = Path(__file__).resolve().parents[2] / "privgate" / "configs" / "default_gate.yaml"
#: exact copies alone (every typed cell compared as it is): what the copied release is checked on
COPIES_GATE = "version: 1\ndataset: typed\nmetrics:\n  common_rows:\n    threshold: {block: 0.5}\n"


def _gate(
    tmp_path: Path,
    instance,
    real: pl.DataFrame,
    holdout: pl.DataFrame,
    release: pl.DataFrame,
    name: str,
    gate: Path = DEFAULT_GATE,
) -> dict[str, dg.AssetCheckEvaluation]:
    real_path, holdout_path = tmp_path / f"{name}_real.parquet", tmp_path / f"{name}_holdout.parquet"
    real.write_parquet(real_path)
    holdout.write_parquet(holdout_path)

    @dg.asset(name=name)
    def release_asset() -> pl.DataFrame:
        return release

    checks = build_privgate_checks(assets=[release_asset], gate_config=gate)
    result = dg.materialize(
        [release_asset, *checks],
        instance=instance,
        raise_on_error=False,
        resources={
            "privgate": PrivgateResource(
                real_path=str(real_path),
                holdout_path=str(holdout_path),
                history_url=f"sqlite:///{tmp_path / 'h.sqlite'}",
                threads=1,
            )
        },
    )
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_a_table_of_every_type_is_gated(tmp_path, instance, typed_frames):
    real, holdout = typed_frames["real"], typed_frames["holdout"]
    honest = _gate(tmp_path, instance, real, holdout, typed_frames["release"], "honest_release")
    decision = honest[DECISION_CHECK]
    assert decision.passed, decision.metadata  # not blocked (the gate decided: pass or warn)
    assert decision.metadata["decision"].value in ("pass", "warn")
    (tmp_path / "copies.yaml").write_text(COPIES_GATE)
    copy = _gate(tmp_path, instance, real, holdout, real, "copied_release", tmp_path / "copies.yaml")
    assert not copy[DECISION_CHECK].passed
    rule = copy["common_rows__threshold_block"]  # every record matched, all types compared
    assert not rule.passed and rule.metadata["value"].value == 1.0


def test_a_type_privgate_cannot_compare_fails_naming_column_and_type(tmp_path, instance, typed_frames):
    frames = {r: f.with_columns(pl.Series("tags", [[1, 2]] * f.height)) for r, f in typed_frames.items()}
    checks = _gate(tmp_path, instance, frames["real"], frames["holdout"], frames["release"], "listed_release")
    decision = checks[DECISION_CHECK]
    assert not decision.passed
    text = " ".join(str(v.value) for v in decision.metadata.values())
    assert "'tags'" in text and "List" in text, text


def _coded_frame(seed: int, n: int = 300) -> pl.DataFrame:
    """Numbers, a category, a postcode of ~1,000 possible codes (coded: compared as equal or not)
    and an identifier unique per record."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "x": rng.normal(size=n),
            "y": rng.normal(size=n) * 3,
            "c": rng.choice(["a", "b", "c", "d"], n),
            "zip": [f"{70000 + int(d):05d}" for d in rng.integers(0, 1_000, n)],
            "patient_id": [f"P{seed:02d}{j:05d}" for j in range(n)],
        }
    )


def test_a_postcode_and_an_identifier_are_gated_through_the_checks(tmp_path, instance, monkeypatch):
    """A postcode of more levels than the limit (compared as equal or not) and an identifier
    column through the Dagster checks with the default gate: an honest release with fresh
    identifiers is not blocked, a copy of the real records is blocked, and an honest release
    that reuses the real identifiers is blocked."""
    from privgate import spaces

    monkeypatch.setattr(spaces, "HIGH_CARDINALITY_LEVELS", 100)  # the postcode's ~250 levels: coded
    real, holdout, honest = _coded_frame(0), _coded_frame(1), _coded_frame(2)
    passed = _gate(tmp_path, instance, real, holdout, honest, "coded_honest")
    assert passed[DECISION_CHECK].passed, passed[DECISION_CHECK].metadata
    copied = _gate(tmp_path, instance, real, holdout, real, "coded_copied")
    assert not copied[DECISION_CHECK].passed
    reused = _gate(tmp_path, instance, real, holdout, honest.with_columns(real["patient_id"]), "coded_reused")
    assert not reused[DECISION_CHECK].passed
    assert not reused["identifier_reuse__threshold_block"].passed
