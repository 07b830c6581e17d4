"""lamella demo: a character-level transformer that learns to write like the Python docs.

The text is the documentation bundled with Python itself (`pydoc_data.topics`,
about 465,000 characters, no download), read as a sequence of characters;
the last 10% is held out. The model is a small GPT: token and position
embeddings, 2 pre-norm blocks of causal multi-head self-attention
(`lamella.nn.dot_product_attention`, 4 heads, width 64) and a GELU MLP, layer
norm by `lamella.nn.standardize`, weights from `lamella.nn.initializers`. It
is trained with Adam from `lamella.nn.optimizers`, one jitted
`value_and_grad` step per batch of random windows, and then writes text by
sampling one character at a time with `lamella.random.categorical`.

The program prints the unigram entropy of the text (the loss of a model that
knows only how often each character occurs), a progress bar with the loss
falling well below it, the held-out loss, and a few generated lines.

Run it with `nox -s transformer` (or `python demo/transformer.py`).
"""

from __future__ import annotations

import math
import time
from pydoc_data.topics import topics
from typing import Any, NamedTuple

import numpy as np
from tqdm import tqdm

import lamella.core as lc
import lamella.nn as nn
import lamella.numpy as lnp
import lamella.random as lr
from lamella.nn import initializers, optimizers

LAYERS, HEADS, WIDTH, CONTEXT = 2, 4, 64, 64
BATCH, STEPS, STEP_SIZE = 16, 1500, 3e-3
PROMPTS = ("The ", "class ", "def ")


class Corpus(NamedTuple):
    chars: str  # the vocabulary: character i has token id i
    train: np.ndarray  # int32 token ids
    valid: np.ndarray


def load_corpus() -> Corpus:
    """Python's bundled documentation as token ids, split 90/10 into train/valid."""
    text = "".join(topics[name] for name in sorted(topics))
    chars = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    tokens = np.array([index[c] for c in text], dtype=np.int32)
    split = int(0.9 * len(tokens))
    return Corpus(chars, tokens[:split], tokens[split:])


def unigram_entropy(tokens: np.ndarray, vocab_size: int) -> float:
    """Entropy (nats per character) of the character frequencies of `tokens`."""
    p = np.bincount(tokens, minlength=vocab_size) / len(tokens)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


# --- the model --------------------------------------------------------------------------

def init_params(key: Any, vocab_size: int) -> dict:
    """Embeddings from normal(0.02), projections from glorot_normal, zero biases."""
    embed, dense = initializers.normal(0.02), initializers.glorot_normal()
    keys = iter(lr.split(key, 3 + 4 * LAYERS))

    def norm():
        return {"scale": initializers.ones(None, (WIDTH,)),
                "bias": initializers.zeros(None, (WIDTH,))}

    blocks = [{"norm1": norm(), "norm2": norm(),
               "qkv": dense(next(keys), (WIDTH, 3 * WIDTH)),
               "proj": dense(next(keys), (WIDTH, WIDTH)),
               "up": dense(next(keys), (WIDTH, 4 * WIDTH)),
               "up_bias": initializers.zeros(None, (4 * WIDTH,)),
               "down": dense(next(keys), (4 * WIDTH, WIDTH)),
               "down_bias": initializers.zeros(None, (WIDTH,))}
              for _ in range(LAYERS)]
    return {"tokens": embed(next(keys), (vocab_size, WIDTH)),
            "positions": embed(next(keys), (CONTEXT, WIDTH)),
            "blocks": blocks, "norm": norm(),
            "head": dense(next(keys), (WIDTH, vocab_size))}


def layer_norm(p: dict, x: Any) -> Any:
    return nn.standardize(x, axis=-1) * p["scale"] + p["bias"]


def self_attention(block: dict, x: Any) -> Any:
    """Causal multi-head self-attention over (batch, time, width)."""
    b, t, _ = x.shape
    q, k, v = lnp.split(x @ block["qkv"], 3, axis=-1)
    heads = lambda a: a.reshape(b, t, HEADS, WIDTH // HEADS)  # noqa: E731
    out = nn.dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
    return out.reshape(b, t, WIDTH) @ block["proj"]


def mlp(block: dict, x: Any) -> Any:
    return nn.gelu(x @ block["up"] + block["up_bias"]) @ block["down"] + block["down_bias"]


def forward(params: dict, tokens: Any) -> Any:
    """Logits (batch, time, vocab) for the next character after each position."""
    x = params["tokens"][tokens] + params["positions"][:tokens.shape[1]]
    for block in params["blocks"]:
        x = x + self_attention(block, layer_norm(block["norm1"], x))
        x = x + mlp(block, layer_norm(block["norm2"], x))
    return layer_norm(params["norm"], x) @ params["head"]


def loss(params: dict, inputs: Any, targets: Any) -> Any:
    """Mean cross-entropy (nats per character) of the next-character predictions."""
    log_probs = nn.log_softmax(forward(params, inputs), axis=-1)
    return -lnp.mean(lnp.take_along_axis(log_probs, targets[..., None], axis=-1))


# --- training ---------------------------------------------------------------------------

opt_init, opt_update, get_params = optimizers.adam(STEP_SIZE)


@lc.jit
def train_step(i: Any, opt_state: Any, inputs: Any, targets: Any) -> tuple[Any, Any]:
    """One Adam step on a batch; returns (loss before the step, new optimizer state)."""
    value, grads = lc.value_and_grad(loss)(get_params(opt_state), inputs, targets)
    return value, opt_update(i, grads, opt_state)


eval_loss = lc.jit(loss)


def get_batch(rng: np.random.Generator, tokens: np.ndarray, batch: int = BATCH
              ) -> tuple[np.ndarray, np.ndarray]:
    """`batch` random windows of CONTEXT characters and the characters that follow each."""
    starts = rng.integers(0, len(tokens) - CONTEXT - 1, batch)
    windows = tokens[starts[:, None] + np.arange(CONTEXT + 1)]
    return windows[:, :-1], windows[:, 1:]


def train(steps: int = STEPS, seed: int = 0, progress: bool = False
          ) -> tuple[dict, list[float], Corpus]:
    """Trains from `seed`; returns (params, per-step training losses, corpus)."""
    corpus = load_corpus()
    opt_state = opt_init(init_params(lr.PRNGKey(seed), len(corpus.chars)))
    rng = np.random.default_rng(seed)
    history = []
    bar = tqdm(range(steps), desc="training", unit="step", disable=not progress)
    for i in bar:
        value, opt_state = train_step(i, opt_state, *get_batch(rng, corpus.train))
        history.append(value)
        if i % 50 == 0 or i == steps - 1:
            bar.set_postfix(loss=f"{float(value):.3f}")
    return get_params(opt_state), [float(v) for v in history], corpus


def held_out_loss(params: dict, corpus: Corpus, batches: int = 8) -> float:
    rng = np.random.default_rng(1234)
    return float(np.mean([float(eval_loss(params, *get_batch(rng, corpus.valid)))
                          for _ in range(batches)]))


# --- sampling ---------------------------------------------------------------------------

@lc.jit
def sample_next(params: dict, window: Any, position: Any, key: Any, temperature: Any) -> Any:
    """A character drawn from the model's distribution after `window[:position + 1]`."""
    logits = forward(params, window[None])[0, position]
    return lr.categorical(key, logits / temperature)


def generate(params: dict, corpus: Corpus, prompt: str, length: int, key: Any,
             temperature: float = 0.8) -> str:
    """`prompt` continued by `length` sampled characters."""
    index = {c: i for i, c in enumerate(corpus.chars)}
    tokens = [index[c] for c in prompt]
    for step_key in lr.split(key, length):
        recent = tokens[-CONTEXT:]
        # Causal attention ignores what follows `position`, so the window is
        # padded to a fixed length and one compiled function serves every step.
        window = np.zeros(CONTEXT, np.int32)
        window[:len(recent)] = recent
        tokens.append(int(sample_next(params, window, len(recent) - 1, step_key, temperature)))
    return "".join(corpus.chars[t] for t in tokens)


def main() -> None:
    start = time.perf_counter()
    corpus = load_corpus()
    entropy = unigram_entropy(corpus.train, len(corpus.chars))
    print(f"text: {len(corpus.train) + len(corpus.valid):,} characters of Python's bundled "
          f"documentation, {len(corpus.chars)} distinct")
    print(f"unigram entropy: {entropy:.3f} nats/char ({entropy / math.log(2):.2f} bits): "
          "the loss of a model that knows only character frequencies")
    n_params = sum(p.size for p in lc.tree_util.tree_leaves(
        init_params(lr.PRNGKey(0), len(corpus.chars))))
    print(f"model: {LAYERS} layers, {HEADS} heads, width {WIDTH}, context {CONTEXT}, "
          f"{n_params:,} parameters; Adam, {STEPS} steps of {BATCH} windows")

    params, history, corpus = train(progress=True)
    first, last = np.mean(history[:20]), np.mean(history[-50:])
    valid = held_out_loss(params, corpus)
    print(f"training loss: {first:.3f} -> {last:.3f} nats/char "
          f"({last / math.log(2):.2f} bits; unigram entropy {entropy:.3f})")
    print(f"held-out loss: {valid:.3f} nats/char, {entropy - valid:.3f} below the unigram "
          "entropy")
    print("samples (temperature 0.8):")
    for prompt, key in zip(PROMPTS, lr.split(lr.PRNGKey(7), len(PROMPTS))):
        lines = generate(params, corpus, prompt, 160, key).splitlines() or [""]
        for line in lines[:3]:
            print("    " + line)
        print("    ---")
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
