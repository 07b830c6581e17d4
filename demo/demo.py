"""lamella demo: train an MLP to read handwritten digits, end to end.

scikit-learn's bundled 8x8 digits (1797 images, no download) are split 80/20 by
a `lamella.random` permutation; a 64-128-10 tanh MLP is initialised from
`lamella.random` keys and trained by SGD with momentum, one `jit(value_and_grad)`
step per minibatch (shuffled each epoch by `lamella.random.permutation`).
Predictions are written for one example and batched with `vmap`. The program
prints the loss's jaxpr size, the start of its StableHLO, a progress bar over
epochs, the test accuracy, and the step time against the same step in NumPy.

Run it with `nox -s demo` (or `python demo/demo.py`).
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr

SIZES = (64, 128, 10)
LEARNING_RATE, MOMENTUM = 0.05, 0.9
BATCH = 64


class Data(NamedTuple):
    x_train: Any
    y_train: Any
    x_test: Any
    y_test: Any


def load_data(key: Any) -> Data:
    """The digits, scaled to [0, 1] and split 80/20 by a random permutation of `key`."""
    digits = load_digits()
    x = lnp.asarray(digits.data.astype(np.float32) / 16.0)
    y = lnp.asarray(digits.target.astype(np.int32))
    order = lr.permutation(key, x.shape[0])
    n_train = int(0.8 * x.shape[0])
    train, test = order[:n_train], order[n_train:]
    return Data(x[train], y[train], x[test], y[test])


def init_params(key: Any, sizes: tuple[int, ...] = SIZES) -> list[tuple[Any, Any]]:
    """Weights from scaled normals (LeCun initialisation), zero biases."""
    keys = lr.split(key, len(sizes) - 1)
    return [(lr.normal(k, (m, n)) / np.sqrt(m), lnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params: list[tuple[Any, Any]], image: Any) -> Any:
    """Logits for ONE image (a 64-vector); `vmap` batches it."""
    h = image
    for w, b in params[:-1]:
        h = lnp.tanh(h @ w + b)
    w, b = params[-1]
    return h @ w + b


batched_predict = lc.vmap(predict, in_axes=(None, 0))


def loss(params: list[tuple[Any, Any]], images: Any, labels: Any) -> Any:
    """Mean cross-entropy of the softmax of the logits."""
    logits = batched_predict(params, images)
    shifted = logits - logits.max(axis=1, keepdims=True)  # for a stable exp
    log_probs = shifted - lnp.log(lnp.sum(lnp.exp(shifted), axis=1, keepdims=True))
    picked = lnp.take_along_axis(log_probs, labels[:, None], axis=1)
    return -lnp.mean(picked)


@lc.jit
def train_step(params, velocity, images, labels):
    """One SGD-with-momentum step; returns new parameters, velocity and the loss."""
    value, grads = lc.value_and_grad(loss)(params, images, labels)
    velocity = lc.tree_util.tree_map(lambda v, g: MOMENTUM * v - LEARNING_RATE * g,
                                     velocity, grads)
    params = lc.tree_util.tree_map(lambda p, v: p + v, params, velocity)
    return params, velocity, value


@lc.jit
def accuracy(params, images, labels):
    return lnp.mean(lnp.argmax(batched_predict(params, images), axis=1) == labels)


def train(epochs: int, seed: int = 0, progress: bool = False):
    """Trains from `seed`; returns (params, data, per-epoch mean losses)."""
    data_key, init_key, shuffle_key = lr.split(lr.key(seed), 3)
    data = load_data(data_key)
    params = init_params(init_key)
    velocity = lc.tree_util.tree_map(lnp.zeros_like, params)
    n = data.x_train.shape[0]
    history = []
    bar = tqdm(range(epochs), desc="training", unit="epoch", disable=not progress)
    for epoch in bar:
        order = lr.permutation(lr.fold_in(shuffle_key, epoch), n)
        losses = []
        for start in range(0, n - BATCH + 1, BATCH):
            idx = order[start:start + BATCH]
            params, velocity, value = train_step(params, velocity, data.x_train[idx],
                                                 data.y_train[idx])
            losses.append(value)
        history.append(float(np.mean([float(v) for v in losses])))
        bar.set_postfix(loss=f"{history[-1]:.4f}")
    return params, data, history


# --- the same training step in plain NumPy, for the timing comparison -----------------
def numpy_step(params, velocity, images, labels):
    (w1, b1), (w2, b2) = params
    h = np.tanh(images @ w1 + b1)
    logits = h @ w2 + b2
    shifted = logits - logits.max(1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(1, keepdims=True)
    n = images.shape[0]
    value = -np.mean(np.log(probs[np.arange(n), labels]))
    d_logits = probs
    d_logits[np.arange(n), labels] -= 1
    d_logits /= n
    d_h = (d_logits @ w2.T) * (1 - h * h)
    grads = [(images.T @ d_h, d_h.sum(0)), (h.T @ d_logits, d_logits.sum(0))]
    velocity = [(MOMENTUM * vw - LEARNING_RATE * gw, MOMENTUM * vb - LEARNING_RATE * gb)
                for (vw, vb), (gw, gb) in zip(velocity, grads)]
    params = [(w + vw, b + vb) for (w, b), (vw, vb) in zip(params, velocity)]
    return params, velocity, value


def best_step_time(step, args, repeat: int = 5, number: int = 200) -> float:
    """Seconds per call: the best of `repeat` runs of `number` calls."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            out = step(*args)
        lc.tree_util.tree_map(lambda a: a.block_until_ready() if hasattr(
            a, "block_until_ready") else a, out)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def main() -> None:
    start = time.perf_counter()
    params = init_params(lr.key(0))
    images, labels = lnp.zeros((BATCH, 64)), lnp.zeros(BATCH, dtype=lnp.int32)

    jaxpr = lc.make_jaxpr(lc.value_and_grad(loss))(params, images, labels)
    print(f"loss and gradient: a jaxpr of {len(jaxpr.jaxpr.eqns)} equations "
          f"({len(lc.make_jaxpr(loss)(params, images, labels).jaxpr.eqns)} for the loss alone)")
    velocity = lc.tree_util.tree_map(lnp.zeros_like, params)
    hlo = train_step.lower(params, velocity, images, labels).as_text().splitlines()
    print(f"its training step in StableHLO ({len(hlo)} lines), first lines:")
    for line in hlo[:6]:
        print("    " + line[:110])

    params, data, history = train(epochs=30, progress=True)
    print(f"loss: epoch 1 {history[0]:.4f} -> epoch {len(history)} {history[-1]:.4f}")
    acc = float(accuracy(params, data.x_test, data.y_test))
    print(f"test accuracy: {acc:.2%} on {data.x_test.shape[0]} held-out digits")

    x, y = data.x_train[:BATCH], data.y_train[:BATCH]
    velocity = lc.tree_util.tree_map(lnp.zeros_like, params)
    t_lamella = best_step_time(train_step, (params, velocity, x, y))
    np_params = [(np.array(w), np.array(b)) for w, b in params]
    np_velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in np_params]
    t_numpy = best_step_time(numpy_step, (np_params, np_velocity, np.asarray(x), np.asarray(y)))
    print(f"time per training step (batch {BATCH}): lamella {t_lamella * 1e6:.0f} us, "
          f"NumPy {t_numpy * 1e6:.0f} us ({t_numpy / t_lamella:.1f}x)")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
