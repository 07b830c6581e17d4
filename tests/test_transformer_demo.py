"""The character-level transformer demo: a few dozen training steps lower the
loss from about log(vocabulary) towards the unigram entropy, the model is causal,
and sampling continues a prompt with characters of the text."""

import importlib.util
import math
import pathlib

import numpy as np

import lamella.random as lr

_PATH = pathlib.Path(__file__).resolve().parents[1] / "demo" / "transformer.py"
_spec = importlib.util.spec_from_file_location("lamella_transformer_demo", _PATH)
demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(demo)


def test_a_few_dozen_steps_lower_the_loss():
    params, history, corpus = demo.train(steps=40, seed=0)
    vocab = len(corpus.chars)
    # An untrained model is close to uniform over the characters.
    assert abs(history[0] - math.log(vocab)) < 0.5, history[0]
    assert np.mean(history[-5:]) < history[0] - 1.0, history
    entropy = demo.unigram_entropy(corpus.train, vocab)
    assert 3.0 < entropy < 3.5
    assert demo.held_out_loss(params, corpus, batches=2) < history[0] - 1.0

    text = demo.generate(params, corpus, "The ", 12, lr.PRNGKey(0))
    assert text.startswith("The ") and len(text) == 16
    assert set(text) <= set(corpus.chars)


def test_the_model_is_causal():
    corpus = demo.load_corpus()
    params = demo.init_params(lr.PRNGKey(1), len(corpus.chars))
    tokens = corpus.train[None, :demo.CONTEXT]
    changed = tokens.copy()
    changed[0, 40:] = (changed[0, 40:] + 1) % len(corpus.chars)
    a, b = demo.forward(params, tokens), demo.forward(params, changed)
    np.testing.assert_allclose(np.asarray(a)[0, :40], np.asarray(b)[0, :40], rtol=1e-5, atol=1e-6)
    assert not np.allclose(np.asarray(a)[0, 40:], np.asarray(b)[0, 40:])
