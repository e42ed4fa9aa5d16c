"""``privgate metrics``: list every registered metric."""

from __future__ import annotations

import argparse
import json

from ..text_tables import TABLE_WIDTH, format_table


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "metrics",
        help="list the metrics: name, family, inputs needed and the attack measured",
        description="List the registered metrics: name, family, the inputs each needs beyond the "
        "real and synthetic data (e.g. a holdout) and the attack it measures, in a table "
        "that fits 100 columns. --wide adds the reference (the paper or tool each "
        "metric comes from); --json prints every field.",
    )
    p.add_argument("--family", help="only this family")
    p.add_argument("--json", action="store_true", help="print JSON (every field)")
    p.add_argument("--wide", action="store_true", help="add the reference column; no width limit")
    return p


def run(args: argparse.Namespace) -> int:
    from ..catalogue import list_metrics

    metrics = list_metrics()
    families = sorted({m["family"] for m in metrics})
    if args.family is not None and args.family not in families:
        from ..errors import ParameterError
        from ..suggest import did_you_mean

        raise ParameterError(
            f"unknown family {args.family!r} for --family{did_you_mean(args.family, families)}"
            f" (families: {', '.join(families)})"
        )
    rows = [m for m in metrics if args.family is None or m["family"] == args.family]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    headers = ["metric", "family", "needs", "attack"] + (["reference"] if args.wide else [])
    print(
        format_table(
            headers,
            [
                [m["name"], m["family"], ",".join(m["needs"]) or "-", m["attack"]]
                + ([m.get("reference") or "-"] if args.wide else [])
                for m in rows
            ],
            width=None if args.wide else TABLE_WIDTH,
            wrap=("attack",),
        )
    )
    return 0
