"""``privgate metrics``: list every registered metric."""

from __future__ import annotations

import argparse
import json

from ._table import format_table


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("metrics", help="list the metrics with family, attack and reference")
    p.add_argument("--family", help="only this family")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def run(args: argparse.Namespace) -> int:
    from ..registry import list_metrics

    rows = [m for m in list_metrics() if args.family is None or m["family"] == args.family]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(format_table(["metric", "family", "needs", "attack"],
                       [[m["name"], m["family"], ",".join(m["needs"]) or "-", m["attack"]] for m in rows]))
    return 0
