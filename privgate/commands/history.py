"""``privgate history``: show the score history of a dataset (or list the datasets)."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from ..text_tables import TABLE_WIDTH, format_table
from ._listing import existing_history_url, print_records


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "history",
        help="show the recorded gate runs and scores of a dataset",
        description="Show a dataset's score history: every metric score per gate run (default), the "
        "runs (--runs), or the scores that rose against the last accepted release "
        "(--regressions). Without --dataset, lists the datasets. --html FILE also writes the "
        "trends by release as one self-contained page.",
    )
    p.add_argument("--dataset", help="dataset name")
    p.add_argument("--metric", help="only this metric")
    p.add_argument("--runs", action="store_true", help="one row per run instead of per score")
    p.add_argument(
        "--regressions", action="store_true", help="scores that rose against the last accepted release before their run"
    )
    p.add_argument("--min-increase", type=float, default=0.0, help="with --regressions: smallest increase shown")
    p.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="table (default; fits 100 columns, --wide for every column), json or csv (every column)",
    )
    p.add_argument("--wide", action="store_true", help="every column in the table; no width limit")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML page of the trends by release (of --dataset, else of "
        "every dataset): each gated metric's value and interval per release with its limits",
    )
    p.add_argument(
        "--history",
        help="history database: SQLAlchemy URL or SQLite file path (default: "
        "$PRIVGATE_HISTORY_URL or ./privgate-history.sqlite)",
    )
    return p


SCORE_VIEW = [
    "release_id",
    "created_at",
    "decision",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "baseline",
    "excess",
    "excess_ci_low",
    "excess_ci_high",
    "p_value",
    "threshold",
    "severity",
    "verdict",
    "error",
]
RUN_VIEW = [
    "seq",
    "release_id",
    "created_at",
    "decision",
    "exit_code",
    "n_real",
    "n_synthetic",
    "n_holdout",
    "config_hash",
    "privgate_version",
    "run_id",
]
# the table's columns without --wide (json, csv and --wide: every column)
COMPACT = {
    "scores": ["release_id", "decision", "metric", "value", "ci", "threshold", "verdict", "error"],
    "runs": ["seq", "release_id", "created_at", "decision", "exit_code", "n_real", "n_synthetic", "n_holdout"],
    "regressions": ["release_id", "metric", "value", "previous_release_id", "previous_value", "increase"],
}


def run(args: argparse.Namespace) -> int:
    from ..gates.checks import EXIT_CODES
    from ..history import HistoryStore

    url = existing_history_url(args.history, "history")
    if url is None:
        return 1
    store = HistoryStore(url)
    view = "datasets"
    try:
        if args.dataset:
            known = store.datasets()
            if args.dataset not in known:
                from ..suggest import did_you_mean

                print(
                    f"privgate history: no runs of dataset {args.dataset!r} in {store!r}"
                    f"{did_you_mean(args.dataset, known)}; datasets: {', '.join(known) or 'none'}",
                    file=sys.stderr,
                )
                return 1
        if not args.dataset:
            names = store.datasets()
            frame = pl.DataFrame({"dataset": names}, schema={"dataset": pl.String})
            frame = frame.join(
                store.runs()
                .group_by("dataset")
                .agg(
                    pl.len().alias("runs"),
                    (pl.col("exit_code") == EXIT_CODES["error"]).sum().cast(pl.Int64).alias("errors"),
                    pl.col("created_at").max().alias("last_run"),
                ),
                on="dataset",
                how="left",
            )
        elif args.regressions:
            frame, view = store.regressions(args.dataset, args.metric, min_increase=args.min_increase), "regressions"
        elif args.runs:
            frame, view = store.runs(args.dataset).select(RUN_VIEW), "runs"
        else:
            frame, view = _scores(store, args.dataset, args.metric), "scores"
        if args.metric and frame.is_empty():
            _check_metric(store, args.dataset, args.metric)
        if args.html:
            from ..render.trends import write_trend_page

            page = write_trend_page(store, args.html, [args.dataset] if args.dataset else None)
            print(f"trends: {page}", file=sys.stderr)
    finally:
        store.close()
    _print(frame, args.format, None if args.wide else COMPACT.get(view, frame.columns))
    if args.dataset and frame.is_empty() and args.format == "table":
        print(f"(no rows for dataset {args.dataset!r})", file=sys.stderr)
    return 0


def _scores(store, dataset: str, metric: str | None) -> pl.DataFrame:
    """Every stored score of ``dataset``, and — unless one metric is asked for — one row per run
    that stored none (it evaluated nothing: verdict ``error``, its first error as ``error``), in
    run order: an error run is listed, never hidden."""
    frame = store.metric_history(dataset, metric)
    if metric is None:
        frame = pl.concat([frame, store.unscored_runs(dataset)]).sort("seq", maintain_order=True)
    return frame.select(SCORE_VIEW)


def _check_metric(store, dataset: str | None, metric: str) -> None:
    """An unknown ``--metric`` is an error naming it (not an empty table): known means
    registered, or stored in this history (a custom metric of another installation)."""
    from ..catalogue import metric_names
    from ..errors import UnknownMetricError
    from ..suggest import did_you_mean

    stored = set(store.metric_history(dataset)["metric"].to_list()) if dataset else set()
    known = set(metric_names()) | stored
    if metric not in known:
        raise UnknownMetricError(
            f"unknown metric {metric!r} for --metric{did_you_mean(metric, known)} (expected a "
            f"registered metric or one in the history: {', '.join(sorted(known))})"
        )


def _intervals_as_text(frame: pl.DataFrame) -> pl.DataFrame:
    """For the table: ``{x}_low`` / ``{x}_high`` pairs as one ``[low, high]`` column named ``x``
    ("-" without an interval), so the table stays readable."""
    for prefix in ("ci", "baseline_ci", "excess_ci"):
        lo, hi = f"{prefix}_low", f"{prefix}_high"
        if lo not in frame.columns:
            continue
        signed = prefix == "excess_ci"
        fmt = (
            (
                lambda c: (
                    pl.when(pl.col(c) >= 0).then(pl.lit("+")).otherwise(pl.lit("")) + pl.col(c).round(4).cast(pl.String)
                )
            )
            if signed
            else (lambda c: pl.col(c).round(4).cast(pl.String))
        )
        text = (
            pl.when(pl.col(lo).is_null())
            .then(pl.lit("-"))
            .otherwise(pl.concat_str([pl.lit("["), fmt(lo), pl.lit(", "), fmt(hi), pl.lit("]")]))
        )
        frame = frame.with_columns(text.alias(prefix)).select(
            [prefix if c == lo else c for c in frame.columns if c != hi]
        )
    return frame


def _print(frame: pl.DataFrame, fmt: str, compact: list[str] | None = None) -> None:
    """Print ``frame``; a table keeps only the ``compact`` columns (when given), with times to
    the second, and fits 100 columns."""
    time_format = "%Y-%m-%d %H:%M:%S" if fmt == "table" and compact else "%Y-%m-%dT%H:%M:%S%.6fZ"
    for column in ("created_at", "last_run"):
        if column in frame.columns:
            frame = frame.with_columns(pl.col(column).dt.strftime(time_format))
    if fmt in ("csv", "json"):
        print_records(frame, fmt)
    else:
        frame = _intervals_as_text(frame)
        if "config_hash" in frame.columns:
            frame = frame.with_columns(pl.col("config_hash").str.slice(0, 12))
        if compact:
            frame = frame.select([c for c in compact if c in frame.columns])
            if "error" in frame.columns and frame["error"].is_null().all():
                frame = frame.drop("error")
        print(
            format_table(
                frame.columns,
                frame.rows(),
                width=TABLE_WIDTH if compact else None,
                wrap=("error", "ci", "previous_release_id", "release_id"),
            )
        )
