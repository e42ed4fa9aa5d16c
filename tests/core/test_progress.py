"""Progress inside a metric: the engine's block loops report rows done, throttled, to the
evaluation's progress callable when it takes a ``detail`` keyword."""

import numpy as np
import polars as pl

import privgate.progress as progress
from privgate import evaluate
from privgate.neighbours import knn
from privgate.neighbours.settings import SearchSettings


def test_reporter_is_throttled():
    now = [0.0]
    seen = []
    with progress.within("m", seen.append, interval=10.0, clock=lambda: now[0]) as rep:
        for t in range(0, 35):
            now[0] = float(t)
            progress.report(t, 35, "rows")
    # at 10, 20 and 30 s only (the first line 10 s after the metric started)
    assert [d["done"] for d in seen] == [10, 20, 30] and rep.calls == 3
    assert seen[0] == {"metric": "m", "done": 10, "total": 35, "unit": "rows", "elapsed": 10.0}
    progress.report(1, 2)  # outside a scope: nothing, no error
    assert len(seen) == 3


def test_exact_search_blocks_report_rows_done():
    rng = np.random.default_rng(0)
    q, t = rng.normal(size=(300, 6)), rng.normal(size=(400, 6))
    small = SearchSettings(block_bytes=4 * 400 * 50)  # 50 query rows per block
    seen = []
    with progress.within("m", seen.append, interval=0.0):
        nb = knn(q, t, 1, settings=small, use_faiss=False, dedupe=False, grouped=False)
    assert [d["done"] for d in seen] == [50, 100, 150, 200, 250, 300]
    assert all(d["total"] == 300 for d in seen)
    np.testing.assert_array_equal(nb.idx, knn(q, t, 1).idx)


def test_evaluate_passes_progress_inside_a_metric_to_a_callable_that_takes_detail(monkeypatch):
    import privgate.neighbours.settings as settings_mod

    monkeypatch.setattr(progress, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(settings_mod, "DEFAULT_SETTINGS", SearchSettings(block_bytes=4 * 200 * 20))
    rng = np.random.default_rng(1)
    r = pl.DataFrame({f"x{c}": rng.normal(size=200) for c in range(14)})
    s = pl.DataFrame({f"x{c}": rng.normal(size=200) for c in range(14)})
    calls, details = [], []

    def with_detail(name, i, total, *, detail=None):
        (details if detail is not None else calls).append((name, detail))

    evaluate(r, s, metrics=["authenticity"], progress=with_detail)
    assert calls == [("authenticity", None)]
    assert details and all(d["metric"] == "authenticity" and d["done"] <= d["total"] for _, d in details)
    plain = []
    evaluate(r, s, metrics=["authenticity"], progress=lambda name, i, total: plain.append(name))
    assert plain == ["authenticity"]  # a (name, i, total) callable keeps one call per metric
