"""A small convolutional network (conv, relu, max-pool by reduce_window, dense)
trained with grad on XLA: its loss falls."""

import numpy as np

import lamella.core as lc
import lamella.lax as lax

N, C, HW, K, CLASSES = 16, 4, 8, 3, 2


def forward(params, images):
    kernel, dense = params
    feats = lax.conv_general_dilated(images, kernel, (1, 1), "SAME")       # N,C,8,8
    feats = lax.max(feats, 0.0)                                             # relu
    pooled = lax.reduce_window(feats, -np.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    flat = lax.reshape(pooled, (images.shape[0], C * (HW // 2) ** 2))
    return lax.dot(flat, dense)                                             # N,CLASSES


def loss(params, images, labels):
    logits = forward(params, images)
    top = lax.reduce_max(logits, (1,))
    shifted = lax.sub(logits, lax.broadcast_in_dim(top, logits.shape, (0,)))
    log_norm = lax.log(lax.reduce_sum(lax.exp(shifted), (1,)))
    picked = lax.reduce_sum(lax.mul(shifted, labels), (1,))
    return lax.div(lax.reduce_sum(lax.sub(log_norm, picked), (0,)), float(N))


def test_small_cnn_trains():
    rng = np.random.default_rng(0)
    # Class 1 images have a bright vertical bar, class 0 a horizontal one.
    labels_int = rng.integers(0, CLASSES, N)
    images = rng.normal(0, 0.3, (N, 1, HW, HW)).astype(np.float32)
    for i, y in enumerate(labels_int):
        if y:
            images[i, 0, :, 3] += 2.0
        else:
            images[i, 0, 3, :] += 2.0
    labels = np.eye(CLASSES, dtype=np.float32)[labels_int]
    params = [rng.normal(0, 0.3, (C, 1, K, K)).astype(np.float32),
              rng.normal(0, 0.1, (C * (HW // 2) ** 2, CLASSES)).astype(np.float32)]
    step = lc.jit(lc.value_and_grad(loss))
    losses = []
    for _ in range(25):
        value, grads = step(params, images, labels)
        params = [p - 0.2 * np.asarray(g) for p, g in zip(params, grads)]
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0], losses
    accuracy = np.mean(np.argmax(np.asarray(forward(params, images)), 1) == labels_int)
    assert accuracy >= 0.9
    text = lc.jit(lc.grad(loss)).lower(params, images, labels).as_text()
    assert "stablehlo.convolution" in text and "stablehlo.select_and_scatter" in text
