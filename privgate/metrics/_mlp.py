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

import math
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
    expit = _EXPIT[0] or _load_expit()
    return expit(z, out=out) if out is not None else expit(z)


_EXPIT: list = [None]  # scipy.special.expit, imported on first use (not at privgate's import)


def _load_expit():
    from scipy.special import expit

    _EXPIT[0] = expit
    return expit


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
    tr, va = train_test_split(idx, test_size=fraction, stratify=y, random_state=int(rng.integers(0, 2**31 - 1)))
    return np.sort(tr), np.sort(va)


def train_mlp(
    x: np.ndarray, y: np.ndarray, hidden: tuple[int, ...], max_iter: int, seed: int, dtype: type = np.float32
) -> MLP:
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
    net.buffers(x_train.shape, min(BATCH_SIZE, train.size), val.size)
    val_positive = y_val == 1
    best, best_theta, stall, epochs = -np.inf, net.theta.copy(), 0, 0
    for _ in range(max_iter):
        net.epoch(x_train, y_train, rng.permutation(train.size))
        epochs += 1
        score = net.validation_accuracy(x_val, val_positive)
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
    sigmoid output layer, 6 for the ReLU layers), drawn from ``rng`` layer by layer.

    Every batch makes the same floating-point operations on the same operands in the same order
    as the plain formulation (``x @ W``, ``+= b``, ``np.maximum(·, 0)``, …), so every rounding
    and every trained weight is the same bit for bit; what is saved is NumPy's overhead around
    them (detection_mlp took 0.82× the CPU time at 1 thread, benchmarks/LOG.md, "detection_mlp's
    trainer"): the views a batch uses are made once (``_plan``), the scalars are ``dt`` scalars
    made once, ReLU takes the maximum with a buffer of zeros (against a scalar NumPy's loop is
    about four times slower, with the same results), the epoch's gather uses ``np.take``'s
    ``mode="clip"`` (with ``out`` the default mode copies through a temporary; the indices are a
    permutation, none is clipped), and the output layer's δWᵀ — an outer product, for which
    ``np.matmul`` takes its own unblocked loop, 0 + δ·w per element — is computed as that product
    plus 0 by two elementwise calls."""

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
        # the scalars of the arithmetic as dt scalars, made once
        self.zero = dt(0)
        self.beta1, self.one_minus_beta1 = dt(BETA1), dt(1 - BETA1)
        self.beta2, self.one_minus_beta2 = dt(BETA2), dt(1 - BETA2)
        self.epsilon = dt(EPSILON)

    def buffers(self, x_shape: tuple[int, ...], batch: int, n_validation: int = 0) -> None:
        """Activations, deltas, ReLU masks and zeros for batches of ``batch`` rows, the epoch's
        shuffled copy of the training rows, and the activations of ``n_validation`` rows."""
        dt = self.dt
        self.batch = batch
        self.acts = [np.empty((batch, h), dtype=dt) for h in self.sizes[1:]]
        self.deltas = [np.empty((batch, h), dtype=dt) for h in self.sizes[1:]]
        self.masks = [np.empty((batch, h), dtype=bool) for h in self.sizes[1:-1]]
        self.zeros = [np.zeros((batch, h), dtype=dt) for h in self.sizes[1:-1]]
        self.xs, self.ys = np.empty(x_shape, dtype=dt), np.empty(x_shape[0], dtype=dt)
        self.plans: dict[int, tuple] = {}
        self.val_acts = [np.empty((n_validation, h), dtype=dt) for h in self.sizes[1:]]
        self.val_zeros = [np.zeros((n_validation, h), dtype=dt) for h in self.sizes[1:-1]]
        self.val_label = np.empty(n_validation, dtype=bool)

    def epoch(self, x_train: np.ndarray, y_train: np.ndarray, order: np.ndarray) -> None:
        """One pass over the training rows in ``order``, one Adam step per batch."""
        n = order.size
        # one gather per epoch: batches are contiguous
        np.take(x_train, order, axis=0, out=self.xs, mode="clip")
        np.take(y_train, order, out=self.ys, mode="clip")
        plans, gradient, adam = self.plans, self._gradient, self._adam
        for s in range(0, n, self.batch):
            gradient(plans.get(s) or self._plan(s, min(n, s + self.batch)))
            adam()

    def _plan(self, s: int, e: int) -> tuple:
        """The views the batch of rows ``s:e`` of the epoch's copy uses: (labels, hidden layers
        (input, W, b as a row, activation, zeros), output layer (input, W, b as a row, output),
        (p, δ) of the output as vectors, δ of the output, backward layers from the last, 1/batch).
        A backward layer: (inputᵀ, δ, ∇W, ∇b) and, above the first, (Wᵀ, δ of the layer below,
        its activation, its ReLU mask, Wᵀ again when δWᵀ is an outer product else None)."""
        xb, yb, bsz = self.xs[s:e], self.ys[s:e], e - s
        a = [buf[:bsz] for buf in self.acts]
        dl = [buf[:bsz] for buf in self.deltas]
        mk = [buf[:bsz] for buf in self.masks]
        zs = [buf[:bsz] for buf in self.zeros]
        ins = [xb, *a[:-1]]
        weights = [(w, b[np.newaxis, :]) for w, b in self.weights]
        n_layers = len(weights)
        forward = tuple((ins[i], *weights[i], a[i], zs[i]) for i in range(n_layers - 1))
        output = (ins[-1], *weights[-1], a[-1])
        backward = []
        for i in range(n_layers - 1, -1, -1):
            layer = (ins[i].T, dl[i], *self.grads[i])
            if i:
                w_t = weights[i][0].T
                # (bsz, 1) @ (1, h): np.matmul's own loop, 0 + δ·w, unless bsz = h = 1 (a dot)
                outer = w_t if w_t.shape[0] == 1 and (bsz > 1 or w_t.shape[1] > 1) else None
                layer += (w_t, dl[i - 1], a[i - 1], mk[i - 1], outer)
            backward.append(layer)
        plan = (yb, forward, output, a[-1][:, 0], dl[-1][:, 0], dl[-1], tuple(backward), self.dt(1.0 / bsz))
        self.plans[s] = plan
        return plan

    def _gradient(self, plan: tuple) -> None:
        """Forward and backward pass of one batch: ``grad`` = (aᵀδ + αW)/batch."""
        yb, forward, (inp, w, b, out), p, d, d_last, backward, inv_bsz = plan
        matmul, add, multiply, zero = np.matmul, np.add, np.multiply, self.zero
        for x_in, w_h, b_h, a_h, zeros in forward:
            matmul(x_in, w_h, out=a_h)
            add(a_h, b_h, out=a_h)
            np.maximum(a_h, zeros, out=a_h)
        matmul(inp, w, out=out)
        add(out, b, out=out)
        _expit(out, out=out)
        # backward: δ_last = p − y
        np.subtract(p, yb, out=d)
        multiply(d_last, inv_bsz, out=d_last)
        for prev_t, dl, gw, gb, *below in backward:
            matmul(prev_t, dl, out=gw)
            add.reduce(dl, axis=0, out=gb)
            if below:
                w_t, dl_prev, a_prev, mask, outer = below
                if outer is None:
                    matmul(dl, w_t, out=dl_prev)
                else:  # matmul(dl, w_t)'s arithmetic in two vectorised calls
                    multiply(dl, outer, out=dl_prev)
                    add(dl_prev, zero, out=dl_prev)
                np.greater(a_prev, zero, out=mask)  # ReLU derivative, no temporaries
                multiply(dl_prev, mask, out=dl_prev)
        scratch = self.scratch
        multiply(self.theta, self.decay, out=scratch)
        multiply(scratch, inv_bsz, out=scratch)
        add(self.grad, scratch, out=self.grad)

    def _adam(self) -> None:
        """One Adam step on the flat parameter vector."""
        scratch, grad, m, v = self.scratch, self.grad, self.m, self.v
        multiply, add = np.multiply, np.add
        self.t += 1
        t = self.t
        multiply(m, self.beta1, out=m)
        multiply(grad, self.one_minus_beta1, out=scratch)
        add(m, scratch, out=m)
        multiply(v, self.beta2, out=v)
        multiply(grad, grad, out=scratch)
        multiply(scratch, self.one_minus_beta2, out=scratch)
        add(v, scratch, out=v)
        step = LEARNING_RATE * math.sqrt(1 - BETA2**t) / (1 - BETA1**t)
        np.sqrt(v, out=scratch)
        add(scratch, self.epsilon, out=scratch)
        np.divide(m, scratch, out=scratch)
        multiply(scratch, self.dt(step), out=scratch)
        np.subtract(self.theta, scratch, out=self.theta)

    def validation_accuracy(self, x_val: np.ndarray, positive: np.ndarray) -> float:
        """Accuracy on the validation rows ``x_val`` (class 1 when P(class 1) > 0.5;
        ``positive``: their labels == 1) of the current weights: MLP.predict_proba's
        arithmetic, into buffers."""
        a = x_val
        for (w, b), out, zeros in zip(self.weights[:-1], self.val_acts, self.val_zeros):
            np.matmul(a, w, out=out)
            np.add(out, b, out=out)
            np.maximum(out, zeros, out=out)
            a = out
        w, b = self.weights[-1]
        z = self.val_acts[-1]
        np.matmul(a, w, out=z)
        np.add(z, b, out=z)
        _expit(z, out=z)
        label = self.val_label
        np.greater(z[:, 0], 0.5, out=label)
        np.equal(label, positive, out=label)
        return np.count_nonzero(label) / label.size
