"""The privacy scorecard: one Dagster asset per release asset that answers "how has the privacy
risk of this dataset moved over the last releases, and why was this one blocked".

Every gate run of the checks (:func:`privgate.dagster.build_privgate_checks`) materialises the
scorecard asset ``<release asset>_privacy_scorecard`` — partitioned like the release asset, the
partition being the release id — with metadata a person reads at a glance in the Dagster UI:

- ``decision`` and ``decision_code`` (0 pass, 1 warn, 2 block: the *Plots* view of the asset's
  metadata draws the decision across releases), ``release`` (the release id), ``reason`` (why
  the release was blocked or warned, in words);
- one number per blocking rule, named after what the rule compares (``common_rows excess``,
  ``hitting_rate``, ``memorisation``, ...), rounded to 4 significant digits: one plot each;
- ``headline``: a table of those rules with the ends of their 95 % intervals, the limits and the
  verdicts; ``releases``: the dataset's last releases from the score history (release id, time,
  decision);
- ``report``: the gate report's decision table as Markdown (the UI shows it), and the paths of
  the HTML and JSON reports when the resource writes them.

Only scores, limits, counts and release ids — never a value of a real record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import dagster as dg

from privgate.finite import finite_or_none as finite
from privgate.gates.rule_kinds import rule_kind
from privgate.gates.rules import check_quantity

from .rule_checks import DECISION_CODES, rule_checks, significant
from .translator import DEFAULT_TRANSLATOR, PrivgateTranslator

if TYPE_CHECKING:  # pragma: no cover
    from privgate.gates import GateConfig, GateOutcome

HISTORY_ROWS = 20
MAX_TREND_CHARTS = 16
# a release's decision as the scorecard's tables write it: a blocked release says BLOCKED
DECIDED = {"pass": "passed", "warn": "WARNED", "block": "BLOCKED"}


def build_privgate_scorecards(
    *, assets: Sequence[Any], group_name: str | None = None, translator: PrivgateTranslator = DEFAULT_TRANSLATOR
) -> list[dg.AssetSpec]:
    """The scorecard asset of every release asset in ``assets`` (the same assets and translator
    given to :func:`~privgate.dagster.build_privgate_checks`), to list among the Definitions'
    assets. The checks materialise it after every gate run; it is partitioned like the release
    asset. Its key and description: :meth:`PrivgateTranslator.get_asset_key` and
    :meth:`~PrivgateTranslator.get_description` of kind ``scorecard``."""
    from .asset_keys import asset_key_and_partitions

    specs = []
    for asset in assets:
        key, partitions_def = asset_key_and_partitions(asset)
        specs.append(
            dg.AssetSpec(
                key=translator.get_asset_key({"kind": "scorecard", "asset_key": key}),
                partitions_def=partitions_def,
                group_name=group_name,
                kinds={"privgate"},
                description=translator.get_description({"kind": "scorecard", "asset_key": key}),
            )
        )
    return specs


def rule_label(metric: str, kind: str) -> str:
    """The scorecard's name of a rule's number: the metric, and what the rule compares."""
    return f"{metric}{rule_kind(kind).scorecard}"


def reason(outcome: "GateOutcome") -> str:
    """Why the release got its decision, in words: the messages of the rules that fired."""
    decision = str(outcome.decision)
    if decision == "pass":
        return "passed: no rule fired"
    fired = [c for c in outcome.checks if c.verdict == decision and not c.skipped]
    if not fired:
        fired = [c for c in outcome.checks if c.verdict != "pass" and not c.skipped]
    words = "; ".join(f"{c.metric} {c.rule}: {c.message}" for c in fired) or "the gate could not decide"
    return f"{'blocked' if decision == 'block' else 'warned'}: {words}"


def _headline(cfg: "GateConfig | None", outcome: "GateOutcome") -> list[dict[str, Any]]:
    rows = []
    results = getattr(outcome, "results", {}) or {}
    declared = rule_checks(cfg) if cfg is not None else []
    for rc in declared:
        if not rc.blocking:
            continue
        match = next(
            (c for c in outcome.checks if c.metric == rc.metric and c.rule == rc.kind and c.severity == rc.severity),
            None,
        )
        if match is None or match.skipped:
            continue
        value, interval = check_quantity(match, results.get(rc.metric))
        lo, hi = interval if interval is not None else (None, None)
        rows.append(
            {
                "label": rule_label(rc.metric, rc.kind),
                "metric": rc.metric,
                "rule": rc.kind,
                "value": finite(value),
                "lower": finite(lo),
                "upper": finite(hi),
                "limit": float(rc.limit),
                "verdict": match.verdict,
            }
        )
    return rows


def _rounded(x: float | None) -> float | None:
    return None if x is None else significant(x)


def _headline_table(rows: list[dict[str, Any]]) -> dg.TableMetadataValue:
    """The headline rules as a Dagster table: value, interval and limit rounded, and the verdict."""
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "rule": r["label"],
                    "value": _rounded(r["value"]),
                    "lower": _rounded(r["lower"]),
                    "upper": _rounded(r["upper"]),
                    "limit": significant(r["limit"]),
                    "verdict": r["verdict"],
                }
            )
            for r in rows
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("rule", "string"),
                dg.TableColumn("value", "float"),
                dg.TableColumn("lower", "float"),
                dg.TableColumn("upper", "float"),
                dg.TableColumn("limit", "float"),
                dg.TableColumn("verdict", "string"),
            ]
        ),
    )


def _releases_table(history: Any) -> dg.TableMetadataValue:
    """The dataset's last ``HISTORY_ROWS`` runs as a Dagster table: release, time recorded and decision."""
    recent = history.tail(HISTORY_ROWS)
    return dg.MetadataValue.table(
        records=[
            dg.TableRecord(
                {
                    "release": str(r["release_id"]),
                    "recorded (UTC)": r["created_at"].strftime("%Y-%m-%d %H:%M:%S"),
                    "decision": DECIDED.get(str(r["decision"]), str(r["decision"])),
                }
            )
            for r in recent.iter_rows(named=True)
        ],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("release", "string"),
                dg.TableColumn("recorded (UTC)", "string"),
                dg.TableColumn("decision", "string"),
            ]
        ),
    )


def scorecard_materialization(
    cfg: "GateConfig | None",
    outcome: "GateOutcome",
    asset_key: Any,
    *,
    partition: str | None = None,
    history: Any = None,
    reports: dict[str, Any] | None = None,
    translator: PrivgateTranslator = DEFAULT_TRANSLATOR,
    trends: Sequence[Any] = (),
) -> dg.AssetMaterialization:
    """The scorecard materialisation of one gate run (see the module docstring). ``history``:
    the dataset's recent runs (a Polars frame of ``HistoryStore.runs``), newest last;
    ``trends``: the dataset's trend charts (:func:`recent_trends`)."""
    from .metadata import summary_markdown

    decision = str(outcome.decision)
    md: dict[str, Any] = {
        "release": dg.MetadataValue.text(str(outcome.release_id)),
        "decision": dg.MetadataValue.text(decision),
        "decision_code": dg.MetadataValue.int(DECISION_CODES.get(decision, 2)),
        "reason": dg.MetadataValue.text(reason(outcome)),
    }
    rows = _headline(cfg, outcome)
    for row in rows:
        if row["value"] is not None:
            md[row["label"]] = dg.MetadataValue.float(significant(row["value"]))
    if rows:
        md["headline"] = _headline_table(rows)
    if history is not None and getattr(history, "height", 0):
        md["releases"] = _releases_table(history)
    if trends:
        md["trends"] = dg.MetadataValue.md(trends_markdown(trends))
    md["report"] = dg.MetadataValue.md(summary_markdown(outcome))
    for kind, path in (reports or {}).items():
        md[f"{kind}_report"] = dg.MetadataValue.path(str(path))
    return dg.AssetMaterialization(
        asset_key=translator.get_asset_key({"kind": "scorecard", "asset_key": asset_key}),
        partition=partition,
        metadata=md,
        description=f"release {outcome.release_id}: {DECIDED.get(decision, decision).upper()} — {reason(outcome)}",
    )


def trends_markdown(charts: Sequence[Any]) -> str:
    """The trend charts as Markdown: per chart its title, its limits in words and the chart as
    an inline PNG (the Dagster UI renders Markdown metadata; nothing is fetched)."""
    from privgate.render.trends import trend_figure

    parts = []
    for chart in charts:
        limits = ", ".join(
            f"{sev} {lim:g}" + ("" if on == "estimate" else f" on the {on} end") for sev, lim, on in chart.limits
        )
        blocked = [r for r, d in zip(chart.releases, chart.decisions) if d == "block"]
        parts.append(
            f"**{chart.title}** — limits: {limits}"
            + (f"; blocked: {', '.join(blocked)}" if blocked else "")
            + f"\n\n![{chart.title}]({trend_figure(chart, dpi=70, colours=64)})"
        )
    return "\n\n".join(parts)


def recent_trends(resource: Any, dataset: str, *, max_charts: int = MAX_TREND_CHARTS) -> list[Any]:
    """The dataset's trend charts by release (:mod:`privgate.render.trends`) of the rules with a
    block limit (at most ``max_charts``), or [] when the history cannot be read."""
    from privgate.render.trends import dataset_charts

    try:
        store = resource.open_history()
    except Exception:  # noqa: BLE001 - the scorecard is informative; the gate already decided
        return []
    try:
        charts = dataset_charts(store, dataset, max_runs=HISTORY_ROWS)
    except Exception:  # noqa: BLE001
        return []
    finally:
        store.close()
    return [c for c in charts if any(sev == "block" for sev, _, _ in c.limits)][:max_charts]


def recent_runs(resource: Any, dataset: str) -> Any:
    """The dataset's recorded runs (oldest first), or None when the history cannot be read."""
    try:
        store = resource.open_history()
    except Exception:  # noqa: BLE001 - the scorecard is informative; the gate already decided
        return None
    try:
        return store.runs(dataset)
    except Exception:  # noqa: BLE001
        return None
    finally:
        store.close()
