"""Regenerate docs/metrics.md from the metric registry (names, families, attacks, references,
docstrings) and a measured table of every metric on the four baselines of the bundled Adult
sample, and the per-metric interval table of docs/intervals.md.

    python docs/make_metrics_doc.py [--intervals-only]
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
import time
from pathlib import Path

import privgate
from privgate.catalogue import get_metric, metric_names
from privgate.data import EXAMPLE_KEYS, EXAMPLE_SENSITIVE, load_example

ORDER = ["uniform_random", "independent_marginals", "noisy_copy", "copy"]
PARAMS = {
    "disclosure_identity": {"keys": EXAMPLE_KEYS[:4], "targets": EXAMPLE_SENSITIVE},
    "disclosure_attribute": {"keys": EXAMPLE_KEYS[:4], "targets": EXAMPLE_SENSITIVE},
}


def baseline_table() -> tuple[str, float]:
    real = load_example()
    holdout = load_example("adult_holdout")
    b = privgate.baselines
    sets = {
        "uniform_random": b.uniform_random(real, seed=1),
        "independent_marginals": b.independent_marginals(real, seed=1),
        "noisy_copy": b.noisy_copy(real, seed=1),
        "copy": b.copy(real),
        "holdout (control)": holdout,
    }
    scores: dict[str, dict[str, float | str]] = {}
    start = time.perf_counter()
    for name, syn in sets.items():
        paired = name in ("noisy_copy", "copy")
        names = [n for n in metric_names() if paired or "pairing" not in get_metric(n).needs]
        params = {k: v for k, v in PARAMS.items() if k in names}
        # self-controlled metrics (the attacks) compare with the holdout as their control set
        controlled = [n for n in names if get_metric(n).self_controlled]
        for group, control in (([n for n in names if n not in controlled], None), (controlled, holdout)):
            rep = privgate.evaluate(
                real,
                syn,
                group,
                holdout=control,
                keys=EXAMPLE_KEYS,
                sensitive=EXAMPLE_SENSITIVE,
                seed=0,
                pairing=True if paired else None,
                params={k: v for k, v in params.items() if k in group},
                on_error="record",
            )
            for metric, res in rep.results.items():
                scores.setdefault(metric, {})[name] = res.value
            for metric, err in rep.errors.items():
                scores.setdefault(metric, {})[name] = "error"
    cols = ORDER + ["holdout (control)"]
    lines = ["| metric | family | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for metric in metric_names():
        row = scores.get(metric, {})
        cells = [f"{row[c]:.3f}" if isinstance(row.get(c), float) else (row.get(c) or "n/a") for c in cols]
        lines.append(f"| `{metric}` | {get_metric(metric).family} | " + " | ".join(cells) + " |")
    return "\n".join(lines), time.perf_counter() - start


def metric_sections() -> str:
    out = []
    for name in metric_names():
        spec = get_metric(name)
        doc = inspect.getdoc(spec.func) or ""
        sig = inspect.signature(spec.func)
        params = [p for p in list(sig.parameters.values())[1:]]
        ptxt = (
            ", ".join(f"`{p.name}={p.default!r}`" if p.default is not inspect._empty else f"`{p.name}`" for p in params)
            or "none"
        )
        out.append(
            textwrap.dedent(f"""
        ### `{name}`
        *Family:* {spec.family} · *Attack:* {spec.attack} · *Needs:* {", ".join(spec.needs) or "real + synthetic"}
        · *Reference:* {spec.reference}

        *Orientation:* {spec.orientation}

        *Parameters:* {ptxt}

        """).lstrip("\n")
            + doc
            + "\n"
        )
    return "\n".join(out)


def interval_table() -> str:
    """Each metric's interval and excess-interval method, as the results state them, on a noisy
    copy of the Adult sample with its holdout (seed 0)."""
    real, holdout = load_example(), load_example("adult_holdout")
    syn = privgate.baselines.noisy_copy(real, seed=1)
    rep = privgate.evaluate(
        real,
        syn,
        holdout=holdout,
        baseline=True,
        keys=EXAMPLE_KEYS,
        sensitive=EXAMPLE_SENSITIVE,
        seed=0,
        pairing=True,
        params=PARAMS,
        on_error="record",
    )
    lines = [
        "| metric | value [95 % interval] | interval method | excess [interval] | excess interval method |",
        "|---|---|---|---|---|",
    ]

    def fmt(x, ci):
        return "–" if x is None else (f"{x:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci is not None else ""))

    for metric in metric_names():
        if metric in rep.errors:
            lines.append(f"| `{metric}` | error | {rep.errors[metric].split(':')[0]} | | |")
            continue
        r = rep.results[metric]
        lines.append(
            f"| `{metric}` | {fmt(r.value, r.ci)} | {r.details.get('ci_method', '–')} | "
            f"{fmt(r.excess, r.excess_ci)} | {r.details.get('excess_ci_method', 'no baseline')} |"
        )
    return "\n".join(lines)


def write_section(path: Path, tag: str, text: str) -> None:
    """Replace the text between <!-- tag:begin --> and <!-- tag:end --> in ``path``."""
    doc = path.read_text()
    pattern = rf"(<!-- {tag}:begin -->\n).*?(<!-- {tag}:end -->)"
    path.write_text(re.sub(pattern, lambda m: m.group(1) + text + "\n" + m.group(2), doc, flags=re.S))


def main() -> None:
    write_section(Path(__file__).with_name("intervals.md"), "methods", interval_table())
    if "--intervals-only" in sys.argv[1:]:
        return
    table, seconds = baseline_table()
    text = f"""# privgate metrics

Every metric returns `value` ∈ [0, 1] oriented as **risk**: 1 means no privacy (a copy of the real
data scores 1), about 0 means a release that knows nothing about the real records. `raw` is the
value of the original published definition in its own orientation and scale. Definitions follow
privgate's metric contract (orientation above; ties, bins and nulls in each metric's section); each section below is the metric's docstring.

Call one metric alone with `privgate.metrics.<name>(real, synthetic, **params)`, or several with
`privgate.evaluate(real, synthetic, [names], params={{name: {{...}}}})`.

## Reading a score: the four baselines of the bundled Adult sample

Measured on the bundled 3,000-row Adult sample (keys {EXAMPLE_KEYS}, sensitive {EXAMPLE_SENSITIVE},
seed 0; baselines with seed 1; hidden_rate only for the row-aligned baselines). `holdout (control)`
is 3,000 *other* real people used as a release: what a perfect generator that memorises nobody
would score. Regenerate with `python docs/make_metrics_doc.py` ({seconds:.0f} s here).

{table}

How to read it:
- A raw value close to the **holdout (control)** column means the release resembles the population,
  not that it memorised individuals; several metrics (authenticity, identifiability, nnaa ≈ 0.5,
  dcr, close_values) are high on the control by construction. Gate those on the **excess over a
  holdout baseline** (`evaluate(..., holdout=H, baseline=True)`), not on their raw value.
- `common_rows`, `hitting_rate` and the disclosure measures are ≈ 0 on the control and meaningful
  on their own.
- The statistical family measures resemblance (utility), not leakage.
- The self-controlled metrics — `memorisation` and the gdpr-attack family (singling_out,
  linkability, inference) — are scored with the bundled holdout as their control set; their
  control column is then the holdout measured against itself (docs/attacks.md). Memorisation's
  detection and false-alarm rates on leak-injected releases are in `docs/validity.md`.
- Where a baseline breaks the order uniform_random ≤ independent_marginals ≤ noisy_copy ≤ copy,
  the definition cannot see the difference (dcr/nndr live in a 2-D projection; distant_values
  saturates at ≈ 1 for any data-like release); the tests document each case.

## The metrics

{metric_sections()}
"""
    Path(__file__).with_name("metrics.md").write_text(text)
    print(table)


if __name__ == "__main__":
    main()
