"""anonymeter's own test properties, translated to privgate's attacks: a notebook that moves
over from anonymeter keeps what anonymeter's tests promise. Each test names the property; the
values are anonymeter's expected values (the tables of its inference / linkability /
singling-out evaluator tests), re-derived by hand where privgate's definition differs
(docs/attacks.md, "Differences from anonymeter")."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

import privgate
from privgate.attacks.inference import correct_guesses
from privgate.attacks.linkability import naive_link_probability
from privgate.attacks.predicates import EQ, GE, ISNULL, LE, code_frames, match_counts
from privgate.attacks.singling_out import univariate_predicates
from privgate.data import load_example
from privgate.errors import ParameterError
from privgate.schema import infer_schema

NAN = np.nan
CODE = {"a": 0.0, "b": 1.0, "c": 2.0, None: NAN}


def _rates(res) -> tuple[float, float]:
    """The attack's and the control's success rates as counted (anonymeter's rates at
    confidence level 0; privgate's details["attack_rate"] is the interval's centre)."""
    d = res.details
    return d["n_success"] / d["n_attacks"], d["n_control_success"] / d["n_control_attacks"]


# ---------------------------------------------------------------------- inference: guesses
@pytest.mark.parametrize(
    "guesses, secrets, expected",
    [
        (("a", "b"), ("a", "b"), (True, True)),
        ((None, "b"), (None, "b"), (True, True)),
        ((None, None), (None, None), (True, True)),
        ((None, "b"), ("a", None), (False, False)),
        (("a", "b"), ("a", "c"), (True, False)),
        (("b", "b"), ("a", "c"), (False, False)),
    ],
)
def test_classification_guesses(guesses, secrets, expected):
    g = np.array([CODE[v] for v in guesses])
    s = np.array([CODE[v] for v in secrets])
    assert tuple(correct_guesses(g, s, numeric=False, tolerance=0.05)) == expected


def test_classification_of_numbers_is_exact():
    assert tuple(correct_guesses(np.array([1.0, 0.0]), np.array([2.0, 0.0]), False, 0.05)) == (False, True)


@pytest.mark.parametrize(
    "guesses, secrets, expected",
    [
        ((1.0, 1.0), (1.0, 1.0), (True, True)),
        ((1.01, 1.0), (1.0, 1.01), (True, True)),
        ((1.0, 1.0), (2.0, 1.01), (False, True)),
        ((1.0, 2.0), (2.0, 1.01), (False, False)),
    ],
)
def test_regression_guesses(guesses, secrets, expected):
    assert tuple(correct_guesses(np.array(guesses), np.array(secrets), True, 0.05)) == expected


@pytest.mark.parametrize(
    "guesses, secrets, tolerance, expected",
    [
        ((1.0, 1.0), (1.05, 1.06), 0.05, (True, False)),  # |1.0 − 1.05| = 0.0500…04 in float64
        ((1.0, 1.0), (1.05, 1.06), 0.06, (True, True)),
        ((1.0, NAN), (1.05, NAN), 0.06, (True, True)),
        ((NAN, NAN), (NAN, NAN), 0.06, (True, True)),
        ((1.0, NAN), (NAN, 1.06), 0.06, (False, False)),
        ((1.0, 1.0), (1.05, 1.06), 0.04, (False, False)),
        ((1.0, 1.0), (1.25, 1.26), 0.2, (False, False)),
        ((1.0, 1.0), (1.26, 1.25), 0.25, (False, True)),  # the edge 0.25 is inclusive
    ],
)
def test_regression_tolerance_edge_is_inclusive(guesses, secrets, tolerance, expected):
    assert tuple(correct_guesses(np.array(guesses), np.array(secrets), True, tolerance)) == expected


def test_tolerance_slack_is_the_tie_tolerance_only():
    """The stated slack is 1e-9·(1 + max): a miss by 1e-6 relative stays a miss."""
    assert not correct_guesses(np.array([1.0]), np.array([1.05 + 1e-6]), True, 0.05)[0]
    assert correct_guesses(np.array([1.0]), np.array([1.05 + 1e-12]), True, 0.05)[0]


# ---------------------------------------------------------------------- inference: rates
@pytest.mark.parametrize(
    "syn, expected",
    [
        ([["a", "b"], ["c", "d"]], 1.0),
        ([["a", "b"], ["c", "e"]], 0.5),
        ([["a", "h"], ["c", "g"]], 0.0),
    ],
)
def test_inference_rates(syn, expected):
    ori = pl.DataFrame([["a", "b"], ["c", "d"]], schema=["c0", "c1"], orient="row")
    syn = pl.DataFrame(syn, schema=["c0", "c1"], orient="row")
    res = privgate.metrics.inference(ori, syn, holdout=ori, aux_cols=["c0"], secret="c1", n_attacks=2)
    assert _rates(res) == (expected, expected)


@pytest.mark.parametrize(
    "aux_cols",
    [
        ["workclass", "capital_loss", "hours_per_week", "age"],
        ["education_num", "marital_status", "capital_loss"],
        ["age", "workclass", "race"],
    ],
)
@pytest.mark.parametrize("secret", ["education", "marital_status", "capital_gain"])
def test_inference_on_a_copy_leaks_every_secret(aux_cols, secret):
    """Records distinct on the auxiliary columns, released as they are: every secret is guessed
    right, for the training records and (the same records as control) for the control."""
    ori = load_example().unique(subset=aux_cols, keep="first", maintain_order=True).head(10)
    res = privgate.metrics.inference(ori, ori, holdout=ori, aux_cols=aux_cols, secret=secret, n_attacks=None)
    assert res.details["n_attacks"] == 10
    assert _rates(res) == (1.0, 1.0)


def test_n_attacks_none_attacks_every_record():
    ori = load_example().head(40)
    hold = load_example().tail(30)
    inf = privgate.metrics.inference(ori, ori, holdout=hold, aux_cols=["age", "race"], secret="sex", n_attacks=None)
    link = privgate.metrics.linkability(ori, ori, holdout=hold, aux_cols=(["age"], ["race"]), n_attacks=None)
    for res in (inf, link):
        assert res.details["n_attacks"] == 40 and res.details["n_control_attacks"] == 30
        assert res.params["n_attacks"] is None
    with pytest.raises(ParameterError, match=r"or None \(every record\)"):
        privgate.metrics.linkability(ori, ori, holdout=hold, n_attacks=0)


def test_a_secret_among_the_auxiliary_columns_is_attacked_as_in_anonymeter():
    """The attacker knows the secret: the nearest synthetic record on columns including it
    carries it whenever the release holds the record."""
    ori = load_example().head(50)
    res = privgate.metrics.inference(
        ori, ori, holdout=load_example().tail(50), aux_cols=["age", "education", "race"], secret="education"
    )
    assert res.details["secret_in_aux"] is True and _rates(res)[0] == 1.0


# ---------------------------------------------------------------------- linkability
ORI = pl.DataFrame({"col0": [0.0, 0.0, 4.0, 0.0], "col1": [0.0, 1.0, 9.0, 4.0]})
SYN = pl.DataFrame({"col0": [0.0, 1.0, 4.0, 9.0], "col1": [0.0, 1.0, 4.0, 9.0]})


@pytest.mark.parametrize("n_attacks", [4, None])
@pytest.mark.parametrize("n_neighbors, expected", [(1, 0.25), (2, 1.0), (3, 1.0), (4, 1.0)])
def test_linkability_rates(n_neighbors, expected, n_attacks):
    res = privgate.metrics.linkability(
        ORI, SYN, holdout=ORI, aux_cols=(["col0"], ["col1"]), n_neighbors=n_neighbors, n_attacks=n_attacks
    )
    assert _rates(res)[0] == expected


@pytest.mark.parametrize("n_neighbors, fails", [(4, False), (5, True), (45, True)])
def test_more_neighbours_than_synthetic_records_is_a_value_error(n_neighbors, fails):
    def run():
        return privgate.metrics.linkability(
            ORI,
            SYN,
            holdout=ORI,
            aux_cols=(["col0"], ["col1"]),  # noqa: E731
            n_neighbors=n_neighbors,
        )

    if fails:
        with pytest.raises(ValueError, match="n_neighbors"):
            run()
    else:
        run()


@pytest.mark.parametrize("n_neighbors, expected", [(1, 0.25), (2, 5 / 6), (3, 1.0), (4, 1.0)])
def test_linkability_baseline(n_neighbors, expected):
    """anonymeter simulates it (tolerance 0.05); privgate reports the exact probability."""
    assert naive_link_probability(4, n_neighbors) == pytest.approx(expected)
    rng = np.random.default_rng(42)
    ori = pl.DataFrame({"c0": rng.choice(["a", "b"], 400), "c1": rng.choice(["a", "b"], 400)})
    syn = pl.DataFrame({"c0": ["a", "b", "a", "a"], "c1": ["a", "b", "a", "a"]})
    res = privgate.metrics.linkability(
        ori, syn, holdout=ori, aux_cols=(["c0"], ["c1"]), n_neighbors=n_neighbors, n_attacks=None
    )
    assert res.details["baseline_rate"] == pytest.approx(expected)


def test_linkability_of_a_copy_reaches_one():
    ori = load_example().head(10)
    res = privgate.metrics.linkability(
        ori,
        ori,
        holdout=load_example().tail(10),
        n_attacks=10,
        n_neighbors=5,
        aux_cols=(["age", "sex"], ["race", "hours_per_week"]),
    )
    assert _rates(res)[0] == 1.0 and res.ci[1] == 1.0


# ---------------------------------------------------------------------- singling out
def _coded(df: pl.DataFrame):
    return code_frames({"synthetic": df, "real": df, "holdout": df}, infer_schema({"real": df}))


def test_univariate_predicates_are_the_unique_values():
    coded = _coded(pl.DataFrame({"col1": ["a", "b", "c", "d"]}))
    preds = univariate_predicates(coded, 10, np.random.default_rng(0))
    assert len(preds) == 4 and set(preds.ops[:, 0]) == {EQ} and set(preds.cols[:, 0]) == {0}
    assert sorted(preds.vals[:, 0]) == sorted(coded["synthetic"][:, 0])


def test_an_all_null_column_is_refused_naming_it():
    """anonymeter skips a column without values; privgate refuses it as an input (it has no
    reading for any metric): the error names the column, and dropping it gives anonymeter's
    predicates (the test above)."""
    from privgate.errors import AllNullColumnError

    df = pl.DataFrame(
        {"col1": ["a", "b", "c", "d"], "col2": [None] * 4}, schema={"col1": pl.String, "col2": pl.Float64}
    )
    with pytest.raises(AllNullColumnError, match="'col2'"):
        privgate.metrics.singling_out(df, df, holdout=df, mode="univariate")


def test_univariate_predicates_with_a_mixed_null_column():
    df = pl.DataFrame({"col1": ["a", "b", "c", "d"], "col2": [2.0, 1.0, 3.0, None]})
    coded = _coded(df)
    preds = univariate_predicates(coded, 10, np.random.default_rng(0))
    got = sorted((int(c), int(o), float(v)) for c, o, v in zip(preds.cols[:, 0], preds.ops[:, 0], preds.vals[:, 0]))
    want = sorted(
        [(0, EQ, float(v)) for v in coded["synthetic"][:, 0]]
        + [(1, EQ, 1.0), (1, EQ, 2.0), (1, EQ, 3.0), (1, LE, 1.0), (1, GE, 3.0), (1, ISNULL, 0.0)]
    )
    assert got == want
    counts, _ = match_counts(coded["synthetic"], preds)
    assert (counts == 1).all()


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_every_predicate_isolates_one_synthetic_record(mode):
    """anonymeter: each query singles out one synthetic record (and the successful ones one
    original record)."""
    from privgate.context import EvaluationContext

    ori = load_example().head(10)
    syn = load_example().slice(10, 10)
    res = privgate.metrics.singling_out(ori, syn, holdout=load_example().tail(10), mode=mode, n_attacks=5)
    ctx = EvaluationContext(ori, syn, holdout=load_example().tail(10))
    coded = code_frames(
        {"synthetic": ctx.synthetic.unique(maintain_order=True), "real": ctx.real, "holdout": ctx.holdout}, ctx.schema
    )
    rng = np.random.default_rng(0)
    preds = (
        univariate_predicates(coded, 5, rng)
        if mode == "univariate"
        else __import__("privgate.attacks.singling_out", fromlist=["x"]).multivariate_predicates(coded, 5, 3, 500, rng)[
            0
        ]
    )
    counts, _ = match_counts(coded["synthetic"], preds)
    assert len(preds) > 0 and (counts == 1).all()
    assert res.details["n_predicates"] <= 5


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_singling_out_a_copy_has_upper_bound_one(mode):
    ori = load_example().head(10)
    res = privgate.metrics.singling_out(ori, ori, holdout=load_example().tail(10), mode=mode, n_attacks=5)
    assert res.ci[1] == pytest.approx(1.0)


@pytest.mark.parametrize("max_attempts", [1, 2, 3])
def test_max_attempts_bounds_the_predicates(max_attempts):
    ori = load_example().head(10)
    res = privgate.metrics.singling_out(ori, ori, holdout=ori, n_attacks=10, max_attempts=max_attempts)
    assert res.details["n_predicates"] <= max_attempts and res.details["n_candidates_tried"] == max_attempts


def test_parameter_errors_are_value_errors():
    """Code that catches anonymeter's ValueErrors catches privgate's parameter errors."""
    ori = load_example().head(10)
    for call in (
        lambda: privgate.metrics.singling_out(ori, ori, holdout=ori, mode="bivariate"),
        lambda: privgate.metrics.inference(ori, ori, holdout=ori, secret="income", tolerance=-1),
        lambda: privgate.metrics.linkability(ori, ori, holdout=ori, aux_cols=(["age"], ["nope"])),
    ):
        with pytest.raises(ValueError):
            call()
    assert issubclass(privgate.errors.UnknownMetricError, ValueError)
