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
within that noise (benchmarks/LOG.md, "detection_mlp's trainer").
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
    net = _Trainer([x.shape[1], *(int(h) for h in hidden), 1], rng, dt)
    train, val = _stratified_validation(y, VALIDATION_FRACTION, rng)
    x_train, y_train = x[train], y[train].astype(dt)
    x_val, y_val = x[val], y[val]
    net.buffers(x_train.shape, min(BATCH_SIZE, train.size))
    best, best_theta, stall, epochs = -np.inf, net.theta.copy(), 0, 0
    for _ in range(max_iter):
        net.epoch(x_train, y_train, rng.permutation(train.size))
        epochs += 1
        score = float(((MLP(net.weights, epochs, best).predict_proba(x_val) > 0.5) == (y_val == 1)).mean())
        stall = stall + 1 if score < best + TOL else 0
        if score > best:
            best = score
            best_theta = net.theta.copy()
        if stall > N_ITER_NO_CHANGE:
            break
    layers = [(best_theta[ws].reshape(shape).copy(), best_theta[bs].copy()) for ws, shape, bs in net.layout]
    return MLP(layers, epochs, float(best))


class _Trainer:
    """The parameters of an MLP with layer ``sizes`` as one flat vector ``theta`` (``weights``:
    per layer (W, b) views of it), its gradient, Adam's state and the batch buffers: one
    allocation, reused by every batch. Initial weights: Glorot uniform (factor 2 for the
    sigmoid output layer, 6 for the ReLU layers), drawn from ``rng`` layer by layer."""

    def __init__(self, sizes: list[int], rng: np.random.Generator, dt: type) -> None:
        self.sizes, self.dt = sizes, dt
        self.layout = _layout(sizes)
        n_params = self.layout[-1][2].stop
        self.theta = np.empty(n_params, dtype=dt)
        self.decay = np.zeros(n_params, dtype=dt)  # α on weights, 0 on biases
        for i, (ws, shape, bs) in enumerate(self.layout):
            factor = 2.0 if i == len(self.layout) - 1 else 6.0
            bound = np.sqrt(factor / (shape[0] + shape[1]))
            self.theta[ws] = rng.uniform(-bound, bound, shape[0] * shape[1])
            self.theta[bs] = rng.uniform(-bound, bound, shape[1])
            self.decay[ws] = ALPHA
        self.weights = [(self.theta[ws].reshape(shape), self.theta[bs]) for ws, shape, bs in self.layout]
        self.grad = np.zeros_like(self.theta)
        self.grads = [(self.grad[ws].reshape(shape), self.grad[bs]) for ws, shape, bs in self.layout]
        self.m = np.zeros_like(self.theta)
        self.v = np.zeros_like(self.theta)
        self.scratch = np.empty_like(self.theta)
        self.t = 0

    def buffers(self, x_shape: tuple[int, ...], batch: int) -> None:
        """Activations, deltas and ReLU masks for batches of ``batch`` rows, and the epoch's
        shuffled copy of the training rows."""
        dt = self.dt
        self.batch = batch
        self.acts = [np.empty((batch, h), dtype=dt) for h in self.sizes[1:]]
        self.deltas = [np.empty((batch, h), dtype=dt) for h in self.sizes[1:]]
        self.masks = [np.empty((batch, h), dtype=bool) for h in self.sizes[1:-1]]
        self.xs, self.ys = np.empty(x_shape, dtype=dt), np.empty(x_shape[0], dtype=dt)

    def epoch(self, x_train: np.ndarray, y_train: np.ndarray, order: np.ndarray) -> None:
        """One pass over the training rows in ``order``, one Adam step per batch."""
        n = order.size
        np.take(x_train, order, axis=0, out=self.xs)  # one gather per epoch: batches are contiguous
        np.take(y_train, order, out=self.ys)
        for s in range(0, n, self.batch):
            e = min(n, s + self.batch)
            self._gradient(self.xs[s:e], self.ys[s:e])
            self._adam()

    def _gradient(self, xb: np.ndarray, yb: np.ndarray) -> None:
        """Forward and backward pass of one batch: ``grad`` = (aᵀδ + αW)/batch."""
        dt, bsz, weights = self.dt, xb.shape[0], self.weights
        a = [buf[:bsz] for buf in self.acts]
        dl = [buf[:bsz] for buf in self.deltas]
        mk = [buf[:bsz] for buf in self.masks]
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
        # backward: δ_last = p − y
        np.subtract(a[-1][:, 0], yb, out=dl[-1][:, 0])
        dl[-1] *= dt(1.0 / bsz)
        for layer in range(len(weights) - 1, -1, -1):
            gw, gb = self.grads[layer]
            prev = xb if layer == 0 else a[layer - 1]
            np.matmul(prev.T, dl[layer], out=gw)
            dl[layer].sum(axis=0, out=gb)
            if layer:
                np.matmul(dl[layer], weights[layer][0].T, out=dl[layer - 1])
                np.greater(a[layer - 1], 0, out=mk[layer - 1])  # ReLU derivative, no temporaries
                np.multiply(dl[layer - 1], mk[layer - 1], out=dl[layer - 1])
        np.multiply(self.theta, self.decay, out=self.scratch)
        self.scratch *= dt(1.0 / bsz)
        self.grad += self.scratch

    def _adam(self) -> None:
        """One Adam step on the flat parameter vector."""
        dt, scratch = self.dt, self.scratch
        self.t += 1
        t = self.t
        self.m *= dt(BETA1)
        np.multiply(self.grad, dt(1 - BETA1), out=scratch)
        self.m += scratch
        self.v *= dt(BETA2)
        np.multiply(self.grad, self.grad, out=scratch)
        scratch *= dt(1 - BETA2)
        self.v += scratch
        step = LEARNING_RATE * np.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        np.sqrt(self.v, out=scratch)
        scratch += dt(EPSILON)
        np.divide(self.m, scratch, out=scratch)
        scratch *= dt(step)
        self.theta -= scratch
