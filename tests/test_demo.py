"""The README's demo: a few epochs of its MLP training on the digits must lower the
loss and already classify most held-out digits."""

import importlib.util
import pathlib

import numpy as np

_PATH = pathlib.Path(__file__).resolve().parents[1] / "demo" / "demo.py"
_spec = importlib.util.spec_from_file_location("lamella_demo", _PATH)
demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(demo)


def test_demo_training_lowers_loss_and_classifies_digits():
    params, data, history = demo.train(epochs=4, seed=0)
    assert history[-1] < 0.6 * history[0], history
    accuracy = float(demo.accuracy(params, data.x_test, data.y_test))
    assert accuracy > 0.85, accuracy


def test_demo_step_matches_numpy_step():
    # The NumPy step used for the timing comparison computes the same update.
    import lamella.random as lr
    params = demo.init_params(lr.key(1))
    data = demo.load_data(lr.key(2))
    x, y = data.x_train[:demo.BATCH], data.y_train[:demo.BATCH]
    velocity = [(np.zeros(w.shape, np.float32), np.zeros(b.shape, np.float32)) for w, b in params]
    new, _, value = demo.train_step(params, velocity, x, y)
    np_params = [(np.array(w), np.array(b)) for w, b in params]
    np_new, _, np_value = demo.numpy_step(np_params, velocity, np.asarray(x), np.asarray(y))
    np.testing.assert_allclose(float(value), np_value, rtol=1e-5)
    for (w, b), (nw, nb) in zip(new, np_new):
        np.testing.assert_allclose(np.asarray(w), nw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(b), nb, rtol=1e-4, atol=1e-6)
