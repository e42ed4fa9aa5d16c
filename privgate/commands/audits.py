"""``privgate audits``: list the generator audits recorded in the history."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from ..text_tables import TABLE_WIDTH, format_table
from ._listing import existing_history_url, print_records

AUDIT_VIEW = [
    "seq",
    "created_at",
    "generator",
    "generator_version",
    "generator_digest",
    "dataset",
    "decision",
    "exit_code",
    "epsilon_lower",
    "claimed_epsilon",
    "delta",
    "auc_lower",
    "n_audited",
    "n_targets",
    "runs",
    "run_id",
]
# the table's columns without --wide (json, csv and --wide: every column)
COMPACT = [
    "created_at",
    "generator",
    "generator_version",
    "decision",
    "epsilon_lower",
    "claimed_epsilon",
    "auc_lower",
    "runs",
]


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "audits",
        help="list the generator audits recorded in the history",
        description="List the generator audits recorded in the history (privgate audit --history), oldest "
        "first: decision, ε lower bound against the claim, AUC lower bound, targets and runs "
        "(--wide, json and csv add the generator's digest, the dataset and the run id).",
    )
    p.add_argument("--generator", help="only this generator")
    p.add_argument("--generator-version", dest="generator_version", help="only this version")
    p.add_argument(
        "--generator-digest",
        dest="generator_digest",
        help="only audits of the generator with this digest (privgate audit prints it; what a "
        "gate's require_audit matches)",
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="table (default; fits 100 columns, --wide for every column), json or csv",
    )
    p.add_argument("--wide", action="store_true", help="every column in the table; no width limit")
    p.add_argument(
        "--history",
        help="history database: SQLAlchemy URL or SQLite file path (default: "
        "$PRIVGATE_HISTORY_URL or ./privgate-history.sqlite)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    from ..history import HistoryStore

    url = existing_history_url(args.history, "audits")
    if url is None:
        return 1
    with HistoryStore(url) as store:
        frame = store.audits(args.generator, args.generator_version).select(AUDIT_VIEW)
    if args.generator_digest:
        frame = frame.filter(pl.col("generator_digest") == args.generator_digest.strip().lower())
    frame = frame.with_columns(pl.col("created_at").dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"))
    if args.format in ("csv", "json"):
        print_records(frame, args.format)
    else:
        if args.wide:
            print(format_table(frame.columns, frame.rows()))
        else:
            compact = (
                frame.select(COMPACT)
                .with_columns(pl.col("created_at").str.slice(0, 16))
                .rename(
                    {
                        "created_at": "time (UTC)",
                        "generator_version": "version",
                        "epsilon_lower": "ε lower",
                        "claimed_epsilon": "claimed ε",
                        "auc_lower": "AUC lower",
                    }
                )
            )
            print(format_table(compact.columns, compact.rows(), width=TABLE_WIDTH, wrap=("generator", "version")))
        if frame.is_empty():
            print("(no audits recorded)", file=sys.stderr)
    return 0
