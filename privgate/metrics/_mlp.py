"""A NumPy multilayer perceptron with scikit-learn's ``MLPClassifier`` definition, for detection_mlp.

Same model and training rule as ``MLPClassifier(hidden_layer_sizes, early_stopping=True,
validation_fraction=0.1)`` with its defaults — ReLU hidden layers, one logistic output unit and
binary log loss, L2 penalty alpha = 1e-4 (gradient (aᵀδ + αW)/batch), Glorot-uniform
initialisation (bound √(6/(fan_in + fan_out)), √(2/…) for the output layer, biases alike), Adam
(learning rate 1e-3, β = 0.9 / 0.999, ε = 1e-8, bias-corrected step size), batches of min(200, n)
over a reshuffle of the training part every epoch, a stratified 10 % validation part, stopping
when validation accuracy (class 1 when p > 0.5) has not improved by 1e-4 for more than 10 epochs,
and the best-validation weights kept — but without scikit-learn's per-batch overhead: every
epoch gathers its shuffled rows once so that each batch is a contiguous slice, all parameters live
in one flat array updated by one vectorised Adam step, and the forward/backward pass writes into
buffers allocated once. The random streams differ from scikit-learn's (NumPy's Generator seeded by
``seed``), so individual fits differ as two seeds of scikit-learn's do; cross-validated AUCs agree
within that noise (docs/performance.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import seeds

ALPHA = 1e-4
LEARNING_RATE = 1e-3
BETA1, BETA2, EPSILON = 0.9, 0.999, 1e-8
BATCH_SIZE = 200
TOL = 1e-4
N_ITER_NO_CHANGE = 10
VALIDATION_FRACTION = 0.1


@dataclass
class MLP:
    """Trained weights (float32 unless trained in float64): ``layers`` = [(W, b), ...], the last
    with one output unit."""

    layers: list[tuple[np.ndarray, np.ndarray]]
    n_epochs: int
    best_validation_accuracy: float

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """P(class 1) for each row of ``x``."""
        a = np.asarray(x, dtype=self.layers[0][0].dtype)
        for w, b in self.layers[:-1]:
            a = a @ w
            a += b
            np.maximum(a, 0, out=a)
        w, b = self.layers[-1]
        return _sigmoid((a @ w + b)[:, 0])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return _expit(z)


def _expit(z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    from scipy.special import expit

    return expit(z, out=out) if out is not None else expit(z)


def _layout(sizes: list[int]) -> list[tuple[slice, tuple[int, int], slice]]:
    """Positions of each layer's (W, b) inside the flat parameter vector."""
    out, pos = [], 0
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = slice(pos, pos + fan_in * fan_out)
        pos += fan_in * fan_out
        b = slice(pos, pos + fan_out)
        pos += fan_out
        out.append((w, (fan_in, fan_out), b))
    return out


def _stratified_validation(y: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified split of positions into (train, validation): ⌈fraction·n⌉ validation
    rows shared between the classes in proportion (scikit-learn's train_test_split rule)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(y.size)
    tr, va = train_test_split(idx, test_size=fraction, stratify=y,
                              random_state=int(rng.integers(0, 2**31 - 1)))
    return np.sort(tr), np.sort(va)


def train_mlp(x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], max_iter: int, seed: int,
              dtype: type = np.float32) -> MLP:
    """Fit the MLP to features ``x`` (n, d) and labels ``y`` ∈ {0, 1}; deterministic for a seed.

    ``dtype`` is the precision of weights, activations, gradients and Adam state: float32 (the
    metric's) or float64 (the reference it is compared with in tests and benchmarks); the same
    seed draws the same initial weights, split and batch orders in both."""
    dt = np.dtype(dtype).type
    if dt not in (np.float32, np.float64):
        raise ValueError(f"train_mlp dtype must be float32 or float64; got {np.dtype(dtype).name}")
    rng = seeds.rng(seed, "detection.mlp")
    x = np.ascontiguousarray(x, dtype=dt)
    y = np.asarray(y)
    sizes = [x.shape[1], *(int(h) for h in hidden), 1]
    layout = _layout(sizes)
    n_params = layout[-1][2].stop
    theta = np.empty(n_params, dtype=dt)
    decay = np.zeros(n_params, dtype=dt)  # α on weights, 0 on biases
    for i, (ws, shape, bs) in enumerate(layout):
        factor = 2.0 if i == len(layout) - 1 else 6.0
        bound = np.sqrt(factor / (shape[0] + shape[1]))
        theta[ws] = rng.uniform(-bound, bound, shape[0] * shape[1])
        theta[bs] = rng.uniform(-bound, bound, shape[1])
        decay[ws] = ALPHA
    weights = [(theta[ws].reshape(shape), theta[bs]) for ws, shape, bs in layout]
    grad = np.zeros_like(theta)
    grads = [(grad[ws].reshape(shape), grad[bs]) for ws, shape, bs in layout]
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    scratch = np.empty_like(theta)

    train, val = _stratified_validation(y, VALIDATION_FRACTION, rng)
    x_train, y_train = x[train], y[train].astype(dt)
    x_val, y_val = x[val], y[val]
    n = train.size
    batch = min(BATCH_SIZE, n)
    acts = [np.empty((batch, h), dtype=dt) for h in sizes[1:]]
    deltas = [np.empty((batch, h), dtype=dt) for h in sizes[1:]]
    masks = [np.empty((batch, h), dtype=bool) for h in sizes[1:-1]]
    xs, ys = np.empty_like(x_train), np.empty_like(y_train)

    best, best_theta, stall, t, epochs = -np.inf, theta.copy(), 0, 0, 0
    for _ in range(max_iter):
        order = rng.permutation(n)
        np.take(x_train, order, axis=0, out=xs)  # one gather per epoch: batches are contiguous
        np.take(y_train, order, out=ys)
        for s in range(0, n, batch):
            e = min(n, s + batch)
            bsz = e - s
            xb, yb = xs[s:e], ys[s:e]
            a = [buf[:bsz] for buf in acts]
            dl = [buf[:bsz] for buf in deltas]
            mk = [buf[:bsz] for buf in masks]
            # forward
            inp = xb
            for (w, b), out in zip(weights[:-1], a[:-1]):
                np.matmul(inp, w, out=out)
                out += b
                np.maximum(out, 0, out=out)
                inp = out
            w, b = weights[-1]
            np.matmul(inp, w, out=a[-1])
            a[-1] += b
            _expit(a[-1], out=a[-1])
            # backward: δ_last = p − y; grads = (aᵀδ + αW)/batch
            np.subtract(a[-1][:, 0], yb, out=dl[-1][:, 0])
            dl[-1] *= dt(1.0 / bsz)
            for layer in range(len(weights) - 1, -1, -1):
                gw, gb = grads[layer]
                prev = xb if layer == 0 else a[layer - 1]
                np.matmul(prev.T, dl[layer], out=gw)
                dl[layer].sum(axis=0, out=gb)
                if layer:
                    np.matmul(dl[layer], weights[layer][0].T, out=dl[layer - 1])
                    np.greater(a[layer - 1], 0, out=mk[layer - 1])  # ReLU derivative, no temporaries
                    np.multiply(dl[layer - 1], mk[layer - 1], out=dl[layer - 1])
            np.multiply(theta, decay, out=scratch)
            scratch *= dt(1.0 / bsz)
            grad += scratch
            # Adam, on the flat vector
            t += 1
            m *= dt(BETA1)
            np.multiply(grad, dt(1 - BETA1), out=scratch)
            m += scratch
            v *= dt(BETA2)
            np.multiply(grad, grad, out=scratch)
            scratch *= dt(1 - BETA2)
            v += scratch
            step = LEARNING_RATE * np.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
            np.sqrt(v, out=scratch)
            scratch += dt(EPSILON)
            np.divide(m, scratch, out=scratch)
            scratch *= dt(step)
            theta -= scratch
        epochs += 1
        score = float(((MLP(weights, epochs, best).predict_proba(x_val) > 0.5) == (y_val == 1)).mean())
        stall = stall + 1 if score < best + TOL else 0
        if score > best:
            best = score
            best_theta = theta.copy()
        if stall > N_ITER_NO_CHANGE:
            break
    layers = [(best_theta[ws].reshape(shape).copy(), best_theta[bs].copy()) for ws, shape, bs in layout]
    return MLP(layers, epochs, float(best))
