"""detection_mlp and membership_inference: separable and indistinguishable cases (the two ends
of the value formula), the value formula, determinism, parameters, the baseline order on the
bundled Adult sample."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from privgate import baselines
from privgate.context import EvaluationContext
from privgate.errors import ParameterError, TooFewRowsError
from privgate.metrics import detection_mlp, membership_inference
from privgate.metrics._mlp import train_mlp
from privgate.metrics.classifier import _n_jobs
from privgate.threads import available_cores


def _separable(n: int = 200) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(0)
    real = pl.DataFrame({"x": rng.normal(0, 1, n), "c": rng.choice(["a", "b"], n)})
    syn = pl.DataFrame({"x": rng.normal(20, 1, n), "c": rng.choice(["a", "b"], n)})
    return real, syn


def test_perfectly_separable_scores_zero():
    # x of the release is 20 standard deviations away: every held-out fold has AUC 1 → value
    # 2·(1 − 1) = 0
    real, syn = _separable()
    det = detection_mlp(real, syn)
    assert det.raw == pytest.approx(1.0)
    assert det.details["auc_per_fold"] == [pytest.approx(1.0)] * 5
    assert det.value == 0.0
    # LightGBM's histogram splits on a 280-record training part can leave a stray real test
    # record on the wrong side: recall ≥ 0.98 in every repetition, value ≤ 0.04
    mi = membership_inference(real, syn)
    assert min(mi.details["recall_per_repetition"]) >= 0.98
    assert mi.raw == pytest.approx(np.mean(mi.details["recall_per_repetition"]))
    assert mi.value <= 0.04


def test_value_formula():
    rng = np.random.default_rng(2)
    real = pl.DataFrame({"x": rng.normal(0, 1, 300)})
    syn = pl.DataFrame({"x": rng.normal(0.7, 1, 300)})
    for res in (detection_mlp(real, syn), membership_inference(real, syn)):
        assert 0.0 < res.raw < 1.0
        assert res.value == pytest.approx(min(1.0, max(0.0, 2 * (1 - res.raw))))


def test_deterministic_and_parallel_equals_serial():
    rng = np.random.default_rng(3)
    real = pl.DataFrame({"x": rng.normal(0, 1, 150), "c": rng.choice(["a", "b", "c"], 150)})
    syn = pl.DataFrame({"x": rng.normal(0.3, 1, 150), "c": rng.choice(["a", "b"], 150)})
    ctx = EvaluationContext(real, syn, seed=11)
    a = detection_mlp(ctx, n_jobs=1)
    assert detection_mlp(ctx, n_jobs=1).raw == a.raw
    assert detection_mlp(ctx, n_jobs=2).details["auc_per_fold"] == a.details["auc_per_fold"]
    b = membership_inference(ctx, n_jobs=1)
    assert membership_inference(ctx, n_jobs=1).raw == b.raw
    assert b.params["seed"] == 11


def test_membership_inference_is_the_same_on_one_thread_and_two():
    """One thread builds LightGBM's histograms row-wise, several column-wise: the same sums in
    the same order, so the same models and recalls."""
    rng = np.random.default_rng(4)
    n = 3000
    real = pl.DataFrame({"x": rng.normal(0, 1, n), "y": rng.gamma(2.0, 1.0, n), "c": rng.choice(list("abcde"), n)})
    syn = pl.DataFrame({"x": rng.normal(0.1, 1.1, n), "y": rng.gamma(2.2, 1.0, n), "c": rng.choice(list("abcde"), n)})
    ctx = EvaluationContext(real, syn, seed=2)
    one = membership_inference(ctx, repetitions=3, n_jobs=1)
    two = membership_inference(ctx, repetitions=3, n_jobs=2)
    assert one.details["recall_per_repetition"] == two.details["recall_per_repetition"]
    assert 0.3 < one.raw < 0.9  # a classifier that learnt something, not a constant


def test_n_jobs_respects_cores():
    cores = available_cores()
    assert _n_jobs(None, 1) == 1  # the run's thread budget
    assert _n_jobs(None, 10_000) == cores
    assert _n_jobs(10_000) == cores
    assert _n_jobs(1) == 1
    assert _n_jobs(-1) == cores
    with pytest.raises(ParameterError, match="n_jobs"):
        _n_jobs(0)


def test_lightgbm_and_mlp_workers_get_the_run_thread_budget(monkeypatch):
    import joblib
    import lightgbm as lgb

    seen = {}
    real_fit = lgb.LGBMClassifier.fit

    def spy(self, *a, **kw):
        params = self.get_params()
        seen.setdefault("lgbm", []).append(params["n_jobs"])
        seen["deterministic"] = params.get("deterministic")
        return real_fit(self, *a, **kw)

    monkeypatch.setattr(lgb.LGBMClassifier, "fit", spy)
    real, syn = _separable(60)
    ctx = EvaluationContext(real, syn, threads=1)
    assert ctx.threads == 1
    mi = membership_inference(ctx, repetitions=2)
    assert seen["lgbm"] == [1, 1] and seen["deterministic"] is True
    assert mi.details["n_jobs"] == 1
    # threads=1: detection_mlp trains its folds in this process (no worker pool)
    monkeypatch.setattr(joblib, "Parallel", lambda *a, **k: pytest.fail("no pool with one thread"))
    assert detection_mlp(ctx, folds=2).details["n_jobs"] == 1
    # an explicit n_jobs still wins over the budget
    membership_inference(ctx, repetitions=1, n_jobs=2)
    assert seen["lgbm"][-1] == min(2, available_cores())


def _blobs(n, shift, d=4, seed=0):
    rng = np.random.default_rng(seed)
    x = np.vstack([rng.normal(0, 1, (n, d)), rng.normal(shift, 1, (n, d))]).astype(np.float32)
    y = np.r_[np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
    return x, y


def _auc(p, y):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y, p)


def test_numpy_mlp_separates_separable_data_and_not_identical_data():
    x, y = _blobs(300, 6.0)
    model = train_mlp(x, y, (100, 50), 300, seed=0)
    xt, yt = _blobs(200, 6.0, seed=1)
    assert _auc(model.predict_proba(xt), yt) == 1.0
    # the same points under both labels: nothing to learn, held-out AUC ≈ 0.5
    rng = np.random.default_rng(5)
    z = rng.normal(size=(400, 4)).astype(np.float32)
    x2, y2 = np.vstack([z, z]), np.r_[np.ones(400, dtype=np.int64), np.zeros(400, dtype=np.int64)]
    m2 = train_mlp(x2, y2, (100, 50), 300, seed=0)
    zt = rng.normal(size=(500, 4)).astype(np.float32)
    p = m2.predict_proba(np.vstack([zt, zt]))
    assert _auc(p, np.r_[np.ones(500), np.zeros(500)]) == 0.5  # identical rows, identical scores
    assert np.all(np.abs(p - 0.5) < 0.1)


def test_numpy_mlp_is_deterministic_and_stops_early():
    x, y = _blobs(250, 1.0)
    a = train_mlp(x, y, (20, 10), 300, seed=3)
    b = train_mlp(x, y, (20, 10), 300, seed=3)
    c = train_mlp(x, y, (20, 10), 300, seed=4)
    np.testing.assert_array_equal(a.predict_proba(x), b.predict_proba(x))
    assert not np.array_equal(a.predict_proba(x), c.predict_proba(x))
    # early stopping: more than 10 epochs without a validation gain ends training before 300
    assert 11 < a.n_epochs < 300
    assert [w.shape for w, _ in a.layers] == [(4, 20), (20, 10), (10, 1)]


def test_numpy_mlp_float32_is_repeatable_and_matches_float64():
    # the metric trains in float32; the same seed must give the same AUC twice, and the AUC must
    # match the float64 trainer's (same seed: same initial weights, split and batch orders).
    # Measured on this data (seeds 0-9, (100, 50)): |AUC32 − AUC64| = 0 to 5 decimals every time,
    # while float64 AUCs of consecutive seeds differ by 0.009 on average (max 0.015); 2e-3 allows
    # float32 rounding to flip a few near-tied rankings, and stays well under the seed noise.
    x, y = _blobs(400, 0.5)
    xt, yt = _blobs(500, 0.5, seed=1)
    a = train_mlp(x, y, (100, 50), 300, seed=2)
    b = train_mlp(x, y, (100, 50), 300, seed=2)
    d = train_mlp(x, y, (100, 50), 300, seed=2, dtype=np.float64)
    assert a.layers[0][0].dtype == np.float32 and d.layers[0][0].dtype == np.float64
    pa, pd = a.predict_proba(xt), d.predict_proba(xt)
    np.testing.assert_array_equal(pa, b.predict_proba(xt))
    assert _auc(pa, yt) == _auc(b.predict_proba(xt), yt)
    assert not np.array_equal(pa.astype(np.float64), pd)  # really two precisions
    assert abs(_auc(pa, yt) - _auc(pd, yt)) <= 2e-3
    with pytest.raises(ValueError, match="float32 or float64"):
        train_mlp(x, y, (4,), 1, seed=0, dtype=np.int64)


def test_numpy_mlp_one_step_matches_the_definition():
    """One epoch of one batch against a hand-written forward/backward/Adam step of the
    MLPClassifier definition (ReLU, logistic output, (aᵀδ + αW)/n gradient, bias-corrected Adam)."""
    from privgate.metrics import _mlp

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    # train for exactly one epoch (max_iter=1) on a training part of 27 rows = one batch
    model = train_mlp(x, y, (4,), 1, seed=9)
    # rebuild the initial weights and the split the trainer drew from the same seed
    g = np.random.default_rng(9)
    b1 = np.sqrt(6 / 7)
    w1 = g.uniform(-b1, b1, 12).astype(np.float32).reshape(3, 4)
    c1 = g.uniform(-b1, b1, 4).astype(np.float32)
    b2 = np.sqrt(2 / 5)
    w2 = g.uniform(-b2, b2, 4).astype(np.float32).reshape(4, 1)
    c2 = g.uniform(-b2, b2, 1).astype(np.float32)
    tr, _ = _mlp._stratified_validation(y, 0.1, g)
    order = g.permutation(tr.size)
    xb, yb = x[tr][order].astype(np.float64), y[tr][order].astype(np.float64)
    n = xb.shape[0]
    h = np.maximum(xb @ w1 + c1, 0)
    p = 1 / (1 + np.exp(-(h @ w2 + c2)[:, 0]))
    d2 = (p - yb)[:, None] / n
    gw2, gc2 = h.T @ d2 + 1e-4 * w2 / n, d2.sum(0)
    d1 = (d2 @ w2.T) * (h > 0)
    gw1, gc1 = xb.T @ d1 + 1e-4 * w1 / n, d1.sum(0)
    # first Adam step: m̂/√v̂ = g/|g| → each parameter moves by lr·sign(g) (ε aside)
    for got, start, grad in (
        (model.layers[0][0], w1, gw1),
        (model.layers[0][1], c1, gc1),
        (model.layers[1][0], w2, gw2),
        (model.layers[1][1], c2, gc2),
    ):
        expect = start - 1e-3 * grad / (np.abs(grad) + 1e-8)
        np.testing.assert_allclose(got, expect, atol=2e-6)


def _plain_train_mlp(x, y, hidden, max_iter, seed, dt):
    """train_mlp written plainly (a temporary per operation, np.matmul for every product,
    np.maximum against 0, the epoch's rows fancy-indexed): the arithmetic the trainer's
    shortcuts must reproduce bit for bit."""
    from scipy.special import expit

    from privgate import seeds
    from privgate.metrics import _mlp

    rng = seeds.rng(seed, "detection.mlp")
    x = np.ascontiguousarray(x, dtype=dt)
    net = _mlp._Trainer([x.shape[1], *hidden, 1], rng, dt)  # the initial weights only
    theta, decay, layout = net.theta.copy(), net.decay, net.layout
    m, v, t = np.zeros_like(theta), np.zeros_like(theta), 0
    train, val = _mlp._stratified_validation(y, _mlp.VALIDATION_FRACTION, rng)
    x_train, y_train, x_val, y_val = x[train], y[train].astype(dt), x[val], y[val]
    best, best_theta, stall, epochs = -np.inf, theta.copy(), 0, 0
    for _ in range(max_iter):
        order = rng.permutation(train.size)
        xs, ys = x_train[order], y_train[order]
        for s in range(0, train.size, _mlp.BATCH_SIZE):
            xb, yb = xs[s : s + _mlp.BATCH_SIZE], ys[s : s + _mlp.BATCH_SIZE]
            n = xb.shape[0]
            layers = [(theta[ws].reshape(shape), theta[bs]) for ws, shape, bs in layout]
            acts = [xb]
            for w, b in layers[:-1]:
                acts.append(np.maximum(acts[-1] @ w + b, 0))
            p = expit(acts[-1] @ layers[-1][0] + layers[-1][1])[:, 0]
            delta = ((p - yb) * dt(1.0 / n))[:, np.newaxis]
            grads = []
            for i in range(len(layers) - 1, -1, -1):
                grads[:0] = [(acts[i].T @ delta).ravel(), delta.sum(axis=0)]
                if i:
                    delta = (delta @ layers[i][0].T) * (acts[i] > 0)
            grad = np.concatenate(grads) + theta * decay * dt(1.0 / n)
            t += 1
            m = m * dt(_mlp.BETA1) + grad * dt(1 - _mlp.BETA1)
            v = v * dt(_mlp.BETA2) + grad * grad * dt(1 - _mlp.BETA2)
            step = _mlp.LEARNING_RATE * np.sqrt(1 - _mlp.BETA2**t) / (1 - _mlp.BETA1**t)
            theta = theta - m / (np.sqrt(v) + dt(_mlp.EPSILON)) * dt(step)
        epochs += 1
        layers = [(theta[ws].reshape(shape), theta[bs]) for ws, shape, bs in layout]
        score = float(((_mlp.MLP(layers, epochs, best).predict_proba(x_val) > 0.5) == (y_val == 1)).mean())
        stall = stall + 1 if score < best + _mlp.TOL else 0
        if score > best:
            best, best_theta = score, theta.copy()
        if stall > _mlp.N_ITER_NO_CHANGE:
            break
    return [(best_theta[ws].reshape(shape), best_theta[bs]) for ws, shape, bs in layout], epochs, best


@pytest.mark.parametrize("hidden, dtype", [((20, 10), np.float32), ((6, 1), np.float32), ((9,), np.float64)])
def test_numpy_mlp_is_bit_identical_to_the_plain_formulation(hidden, dtype):
    # the trainer's buffers, zeros operand of ReLU, epoch gather and outer product for the output
    # layer's δWᵀ change NumPy's overhead, never a rounding: every weight, the epoch count and the
    # best validation accuracy equal the plain formulation's exactly (701 rows: 630 training rows,
    # the last batch 30)
    x, y = _blobs(350, 0.7, d=5)
    x = np.vstack([x, x[:1] + 1])
    y = np.r_[y, 0]
    model = train_mlp(x, y, hidden, 300, seed=1, dtype=dtype)
    layers, epochs, best = _plain_train_mlp(x, y, hidden, 300, 1, np.dtype(dtype).type)
    assert model.n_epochs == epochs > 11 and model.best_validation_accuracy == best
    for (w, b), (w_plain, b_plain) in zip(model.layers, layers):
        assert w.dtype == np.dtype(dtype) and w.tobytes() == w_plain.tobytes() and b.tobytes() == b_plain.tobytes()


def test_invalid_parameters_and_too_few_rows():
    real, syn = _separable(20)
    ctx = EvaluationContext(real, syn)
    with pytest.raises(ParameterError, match="folds"):
        detection_mlp(ctx, folds=1)
    with pytest.raises(ParameterError, match="repetitions"):
        membership_inference(ctx, repetitions=0)
    with pytest.raises(ParameterError, match="test_size"):
        membership_inference(ctx, test_size=1.5)
    with pytest.raises(TooFewRowsError, match="detection_mlp needs at least 5 real rows; got 3"):
        detection_mlp(real.head(3), syn)
    with pytest.raises(TooFewRowsError, match="membership_inference needs at least 2 synthetic rows; got 1"):
        membership_inference(real, syn.head(1))
    # 6 + 6 rows, 5 folds: training parts of 9–10 records; early stopping's 10 % (⌈0.9⌉ = 1 record)
    # cannot hold both classes → a named error, not scikit-learn's from inside a fold
    with pytest.raises(TooFewRowsError, match="6 real and 6 synthetic rows give 9 records"):
        detection_mlp(real.head(6), syn.head(6))
    # 7 + 7: parts of 11–12 records (⌈1.1⌉ = 2 held out) → computes; 20 std apart → AUC 1
    assert detection_mlp(real.head(7), syn.head(7)).raw == pytest.approx(1.0)
    # 3 + 3 rows with test_size 0.1: ⌈0.6⌉ = 1 test record cannot hold both classes
    with pytest.raises(TooFewRowsError, match="into 5 training and 1 test records"):
        membership_inference(real.head(3), syn.head(3), test_size=0.1)


# ----------------------------------------------------------------- Adult sample baselines
@pytest.fixture(scope="module")
def adult():
    from privgate.data import load_example

    return load_example("adult_sample")


@pytest.fixture(scope="module")
def adult_values(adult):
    out = {}
    for name, fn in baselines.BASELINES.items():
        ctx = EvaluationContext(adult, fn(adult, seed=0), seed=0)
        out[name] = {"detection_mlp": detection_mlp(ctx).value, "membership_inference": membership_inference(ctx).value}
    return out


def test_copy_scores_one(adult_values):
    # a copy is indistinguishable: duplicates carry both labels, AUC ≤ ½ and recall ≤ ½ → value 1
    assert adult_values["copy"] == {"detection_mlp": 1.0, "membership_inference": 1.0}


def test_adult_baseline_order_detection_mlp(adult_values):
    v = {name: r["detection_mlp"] for name, r in adult_values.items()}
    assert v["uniform_random"] <= v["independent_marginals"] <= v["noisy_copy"] <= v["copy"], v
    assert v["uniform_random"] < 0.05


def test_adult_baseline_order_membership_inference(adult, adult_values):
    # Documented exception: the baseline's Gaussian noise turns the exact zeros of the
    # zero-inflated capital_gain / capital_loss into small non-zero values, which LightGBM
    # spots (recall ≈ 1), so it ranks noisy_copy as *less* risky than independent_marginals.
    # The metric is right — that noisy copy is distinguishable; without those two columns the
    # order holds.
    v = {name: r["membership_inference"] for name, r in adult_values.items()}
    assert v["uniform_random"] <= v["independent_marginals"] <= v["copy"], v
    assert v["uniform_random"] <= v["noisy_copy"] <= v["copy"], v
    trimmed = adult.drop(["capital_gain", "capital_loss"])
    w = {
        name: membership_inference(trimmed, fn(trimmed, seed=0), seed=0).value
        for name, fn in baselines.BASELINES.items()
    }
    assert w["uniform_random"] <= w["independent_marginals"] <= w["noisy_copy"] <= w["copy"], w


# ------------------------------------------------------------- detection_mlp's records per class
def _two_by(n: int, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    real = pl.DataFrame({"x": rng.normal(0, 1, n), "c": rng.choice(["a", "b", "c"], n)})
    syn = pl.DataFrame({"x": rng.normal(0.5, 1, n), "c": rng.choice(["a", "b"], n)})
    return real, syn


def _stacked(monkeypatch) -> list:
    """Record the labels detection_mlp cross-validates on (one entry per call)."""
    from privgate.metrics import classifier

    seen, folds = [], classifier._detection_folds

    def spy(ctx, x, y, *a, **k):
        seen.append(y.copy())
        return folds(ctx, x, y, *a, **k)

    monkeypatch.setattr(classifier, "_detection_folds", spy)
    return seen


FAST = {"hidden_layer_sizes": (4,), "max_iter": 2}


def test_detection_mlp_samples_max_records_per_class_and_says_so(monkeypatch):
    from privgate.metrics.classifier import MAX_DETECTION_RECORDS

    seen = _stacked(monkeypatch)
    real, syn = _two_by(60_000)
    res = detection_mlp(EvaluationContext(real, syn, seed=5, threads=1), **FAST)
    assert MAX_DETECTION_RECORDS == 50_000
    assert np.bincount(seen[-1]).tolist() == [50_000, 50_000]  # synthetic, real
    sampled = res.details["sampled"]
    assert (sampled["side"], sampled["n"], sampled["of"], sampled["seed"]) == ("real", 50_000, 60_000, 5)
    assert (sampled["synthetic"]["n"], sampled["synthetic"]["of"]) == (50_000, 60_000)
    assert "record-sampling error" in res.details["ci_method"] and "50,000 of 60,000 real" in res.details["ci_method"]
    assert res.params["max_records"] == 50_000
    # a smaller cap, and an explicit smaller run sample (the run's own sampled rows)
    detection_mlp(EvaluationContext(real, syn, seed=5, threads=1), max_records=1_000, **FAST)
    assert np.bincount(seen[-1]).tolist() == [1_000, 1_000]
    ctx = EvaluationContext(real, syn, seed=5, threads=1, sample=2_000)
    res = detection_mlp(ctx, **FAST)
    assert np.bincount(seen[-1]).tolist() == [2_000, 2_000]
    assert res.details["sampled"]["rule"] == "explicit sample size"


def test_detection_mlp_max_records_none_or_sample_off_uses_every_record(monkeypatch):
    seen = _stacked(monkeypatch)
    real, syn = _two_by(30_000)
    for kw, sample in (({"max_records": None}, "auto"), ({}, "off"), ({}, None)):
        res = detection_mlp(EvaluationContext(real, syn, seed=5, threads=1, sample=sample), **kw, **FAST)
        assert np.bincount(seen[-1]).tolist() == [30_000, 30_000]
        assert "sampled" not in res.details and "sampl" not in res.details["ci_method"]
    # at most max_records per class: nothing is sampled, the same result as every record
    small_r, small_s = real.head(3_000), syn.head(2_000)
    a = detection_mlp(EvaluationContext(small_r, small_s, seed=5, threads=1), **FAST)
    b = detection_mlp(EvaluationContext(small_r, small_s, seed=5, threads=1), max_records=None, **FAST)
    assert (a.value, a.raw, a.ci, a.details["auc_per_fold"]) == (b.value, b.raw, b.ci, b.details["auc_per_fold"])
    assert "sampled" not in a.details
    with pytest.raises(ParameterError, match="max_records"):
        detection_mlp(EvaluationContext(small_r, small_s), max_records=1)


def test_detection_mlp_sample_is_seeded():
    from privgate.metrics.classifier import class_rows

    real, syn = _two_by(30_000)

    def rows(seed):
        got, _ = class_rows(EvaluationContext(real, syn, seed=seed), 25_000, "detection.sample")
        return got

    a, b, c = rows(5), rows(5), rows(6)
    for role in ("real", "synthetic"):
        np.testing.assert_array_equal(a[role], b[role])
        assert a[role].size == 25_000 and np.all(np.diff(a[role]) > 0)
        assert not np.array_equal(a[role], c[role])
    assert not np.array_equal(a["real"], a["synthetic"])  # the two classes draw independently
    ctx = EvaluationContext(real, syn, seed=5, threads=1)
    first, second = detection_mlp(ctx, **FAST), detection_mlp(ctx, **FAST)
    assert (first.raw, first.ci) == (second.raw, second.ci)


def test_membership_inference_samples_the_same_share_of_each_class(monkeypatch):
    from privgate.metrics import classifier

    seen, fits = [], classifier._membership_fits

    def spy(ctx, x, y, *a, **k):
        seen.append(y.copy())
        return fits(ctx, x, y, *a, **k)

    monkeypatch.setattr(classifier, "_membership_fits", spy)
    assert classifier.MAX_MEMBERSHIP_RECORDS == 50_000
    real, syn = _two_by(3_000)
    syn = syn.head(1_500)
    res = membership_inference(EvaluationContext(real, syn, seed=5, threads=1), repetitions=1, max_records=1_000)
    # the larger class keeps max_records, the other the same share: the class ratio is kept
    assert np.bincount(seen[-1]).tolist() == [500, 1_000]
    sampled = res.details["sampled"]
    assert (sampled["n"], sampled["of"]) == (1_000, 3_000)
    assert (sampled["synthetic"]["n"], sampled["synthetic"]["of"]) == (500, 1_500)
    assert "record-sampling error" in res.details["ci_method"]
    again = membership_inference(EvaluationContext(real, syn, seed=5, threads=1), repetitions=1, max_records=1_000)
    assert (again.raw, again.ci) == (res.raw, res.ci)
    # sample off, max_records=None, or at most max_records per class: every record, the same result
    cases = (({"max_records": None}, "auto"), ({"max_records": 1_000}, "off"), ({}, "auto"))
    every = [
        membership_inference(EvaluationContext(real, syn, seed=5, threads=1, sample=sample), repetitions=1, **kw)
        for kw, sample in cases
    ]
    assert all(np.bincount(y).tolist() == [1_500, 3_000] for y in seen[-3:])
    assert len({(r.value, r.raw, r.ci) for r in every}) == 1
    assert not any("sampled" in r.details for r in every)
