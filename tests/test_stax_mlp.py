"""The classic stax MLP (JAX's examples/mnist_classifier.py, sized for 8x8 digits):
serial(Dense, Relu, Dense, Relu, Dense, LogSoftmax) trained with optimizers.adam
on scikit-learn's bundled digits reaches > 95% held-out accuracy."""

import itertools

import numpy as np
from sklearn.datasets import load_digits

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr
from lamella.nn import optimizers, stax

BATCH, EPOCHS, STEP_SIZE = 128, 12, 1e-3

init_random_params, predict = stax.serial(
    stax.Dense(256), stax.Relu,
    stax.Dense(256), stax.Relu,
    stax.Dense(10), stax.LogSoftmax)


def loss(params, batch):
    inputs, targets = batch
    return -lnp.mean(lnp.sum(predict(params, inputs) * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    return lnp.mean(lnp.argmax(predict(params, inputs), axis=1) == lnp.argmax(targets, axis=1))


def digits(seed=0):
    """(train, test) batches of (images scaled to [0, 1], one-hot labels), split 80/20."""
    bunch = load_digits()
    images = (bunch.data / 16.0).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[bunch.target]
    order = np.random.default_rng(seed).permutation(len(images))
    n_train = int(0.8 * len(images))
    train, test = order[:n_train], order[n_train:]
    return (images[train], labels[train]), (images[test], labels[test])


def test_stax_mlp_on_digits_with_adam():
    (train_images, train_labels), test_batch = digits()
    opt_init, opt_update, get_params = optimizers.adam(STEP_SIZE)

    @lc.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, lc.grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(lr.PRNGKey(0), (-1, 64))
    opt_state = opt_init(init_params)
    rng = np.random.default_rng(1)
    num_batches = len(train_images) // BATCH
    itercount = itertools.count()
    first_loss = float(loss(init_params, test_batch))
    for _ in range(EPOCHS):
        perm = rng.permutation(len(train_images))
        for b in range(num_batches):
            idx = perm[b * BATCH:(b + 1) * BATCH]
            opt_state = update(next(itercount), opt_state, (train_images[idx], train_labels[idx]))
    params = get_params(opt_state)
    test_acc = float(accuracy(params, test_batch))
    assert float(loss(params, test_batch)) < 0.2 * first_loss
    assert test_acc > 0.95, test_acc
