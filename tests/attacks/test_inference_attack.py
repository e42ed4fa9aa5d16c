"""inference by hand: categorical and numeric secrets, negative values, the aligned naive baseline."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.attacks.inference import correct_guesses
from privgate.stats import control_risk


def test_categorical_secret_by_hand():
    # nearest synthetic on x: training 1 → 0 (a ✓), 9 → 10 (b ✓), 19 → 20 (c, truth a ✗) → 2 of 3;
    # holdout 2 → 0 (a, truth b ✗), 11 → 10 (b ✓), 21 → 20 (c ✓) → 2 of 3
    syn = pl.DataFrame({"x": [0.0, 10.0, 20.0], "s": ["a", "b", "c"]})
    real = pl.DataFrame({"x": [1.0, 9.0, 19.0], "s": ["a", "b", "a"]})
    hold = pl.DataFrame({"x": [2.0, 11.0, 21.0], "s": ["b", "b", "c"]})
    res = privgate.metrics.inference(real, syn, holdout=hold, secret="s", aux_cols=["x"])
    d = res.details
    assert d["n_success"] == 2 and d["n_control_success"] == 2 and d["secret_compared_as"] == "level"
    assert res.raw == pytest.approx(control_risk(2, 3, 2, 3).risk) and res.value == 0.0
    assert list(res.per_record) == [1.0, 1.0, 0.0] and d["correct_rows"] == [0, 1]


def test_numeric_secret_with_tolerance_and_negative_guesses():
    # guesses 100, −50, 0 for x near 0, 10, 20; 5 % of |guess|:
    # training 104 (|4| ≤ 5 ✓), −52 (|2| ≤ 2.5 ✓), 1 (|1| ≤ 0 ✗) → 2 of 3;
    # holdout 110 (✗), −10 (|40| > 2.5 ✗ — anonymeter's signed division counts it right), 0 (✓) → 1 of 3
    syn = pl.DataFrame({"x": [0.0, 10.0, 20.0], "y": [100.0, -50.0, 0.0]})
    real = pl.DataFrame({"x": [1.0, 9.0, 19.0], "y": [104.0, -52.0, 1.0]})
    hold = pl.DataFrame({"x": [2.0, 11.0, 21.0], "y": [110.0, -10.0, 0.0]})
    res = privgate.metrics.inference(real, syn, holdout=hold, secret="y", aux_cols=["x"])
    assert res.details["n_success"] == 2 and res.details["n_control_success"] == 1
    assert res.details["secret_compared_as"] == "number"
    assert res.raw == pytest.approx(control_risk(2, 3, 1, 3).risk)
    # regression=False compares numbers exactly
    exact = privgate.metrics.inference(real, syn, holdout=hold, secret="y", aux_cols=["x"], regression=False)
    assert exact.details["n_success"] == 0 and exact.details["n_control_success"] == 1


def test_correct_guesses_nulls():
    g = np.array([np.nan, np.nan, 1.0, 1.0])
    t = np.array([np.nan, 1.0, np.nan, 1.04])
    assert correct_guesses(g, t, True, 0.05).tolist() == [True, False, False, True]
    assert correct_guesses(g, t, False, 0.05).tolist() == [True, False, False, False]


def test_naive_baseline_compares_each_guess_with_the_same_target():
    # one synthetic record with secret "b": a random guess is always "b", right exactly for the
    # training records whose secret is "b" (2 of 4), whatever the order of the frames
    syn = pl.DataFrame({"x": [5.0], "s": ["b"]})
    real = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "s": ["a", "b", "c", "b"]})
    res = privgate.metrics.inference(real, syn, holdout=real, secret="s")
    assert res.details["n_baseline_success"] == 2


def test_several_secrets_report_the_worst():
    syn = pl.DataFrame({"x": [0.0, 10.0, 20.0], "s": ["a", "b", "c"], "t": ["u", "u", "u"]})
    real = pl.DataFrame({"x": [1.0, 9.0, 19.0], "s": ["a", "b", "c"], "t": ["u", "v", "v"]})
    hold = pl.DataFrame({"x": [2.0, 11.0, 21.0], "s": ["b", "a", "a"], "t": ["u", "u", "u"]})
    res = privgate.metrics.inference(real, syn, holdout=hold, sensitive=["s", "t"], aux_cols=["x"])
    assert set(res.per_attribute) == {"s", "t"} and res.details["secret"] == "s"
    assert res.per_attribute["s"] == res.value > res.per_attribute["t"] == 0.0


@pytest.mark.parametrize("secret", ["s", "y"])
def test_sampled_rows_only_search_equals_the_whole_space_search(secret):
    """inference encodes only the sampled training and holdout rows (plus the release) and searches
    them together; the guesses must be those of the whole mixed space searched per role (nulls,
    duplicates and ties included)."""
    from privgate.attacks._control import sample_rows
    from privgate.context import EvaluationContext

    rng = np.random.default_rng(9)

    def frame(n):
        x = rng.integers(0, 5, n).astype(float)
        x[rng.random(n) < 0.1] = np.nan
        s = [["a", "b", "c", None][i] for i in rng.integers(0, 4, n)]
        return pl.DataFrame(
            {
                "x": x,
                "c": [["p", "q"][i] for i in rng.integers(0, 2, n)],
                "s": s,
                "y": rng.integers(-3, 4, n).astype(float),
            }
        )

    real, syn, hold = frame(300), frame(250), frame(280)
    aux = ["x", "c"] + (["y"] if secret == "s" else ["s"])
    res = privgate.metrics.inference(real, syn, holdout=hold, secret=secret, aux_cols=aux, n_attacks=120, seed=4)
    ctx = EvaluationContext(real, syn, holdout=hold, seed=4)
    targets, controls = sample_rows(300, 120, 4, "attack.targets"), sample_rows(280, 120, 4, "attack.controls")
    space = ("mixed", tuple(aux))
    guess_t = syn[secret].to_numpy()[ctx.neighbours(space, "real", "synthetic", 1, rows=targets).idx[:, 0]]
    guess_c = syn[secret].to_numpy()[ctx.neighbours(space, "holdout", "synthetic", 1, rows=controls).idx[:, 0]]
    numeric = secret == "y"

    def right(guess, truth):
        if numeric:
            return correct_guesses(guess.astype(float), truth.astype(float), True, 0.05)
        return np.array([g == t for g, t in zip(guess, truth)])  # None == None: null is a level

    ok_t = right(guess_t, real[secret].to_numpy()[targets])
    ok_c = right(guess_c, hold[secret].to_numpy()[controls])
    assert res.details["correct_rows"] == targets[ok_t].tolist()
    assert res.details["n_control_success"] == int(ok_c.sum())
    assert 0 < ok_t.sum() < 120 and 0 < ok_c.sum() < 120  # the case is not degenerate
