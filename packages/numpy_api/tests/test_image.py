"""lamella.image against JAX's recorded numbers (every method, antialias on and off,
1-D to 3-D, scale_and_translate with outputs off the input's edges; recorded by
benchmarks/record_jax_image.py), against first principles (a constant image stays
constant, identity resizes change nothing, antialiased downsampling averages), and
through jit, grad (also in scale and translation) and vmap."""

import itertools
import json
import pathlib

import numpy as np
import pytest
from checks import check, check_derivatives

import lamella.core as lc
import lamella.numpy as lnp
from lamella import image

CASES = json.loads((pathlib.Path(__file__).parent / "data" / "jax_image_known_answers.json")
                   .read_text())


def _array(spec):
    return np.asarray(spec["array"], dtype=spec["dtype"])


def _group_key(case):
    return (case["fn"], case["image"]["dtype"], tuple(np.shape(case["image"]["array"])),
            tuple(case["shape"]), json.dumps(case.get("scale")))


GROUPS = [list(g) for _, g in itertools.groupby(sorted(CASES, key=_group_key), _group_key)]


def _run(case, x):
    if case["fn"] == "resize":
        return image.resize(x, case["shape"], case["method"], antialias=case["antialias"])
    return image.scale_and_translate(x, case["shape"], case["spatial_dims"],
                                     np.float32(case["scale"]), np.float32(case["translation"]),
                                     case["method"], antialias=case["antialias"])


@pytest.mark.parametrize("group", GROUPS, ids=[f"{g[0]['fn']}-{g[0]['shape']}-"
                                               f"{g[0]['image']['dtype']}" for g in GROUPS])
def test_matches_jax_known_answers(group):
    x = _array(group[0]["image"])
    # One compiled program per group: every method and antialias setting at once.
    outs = lc.jit(lambda v: [_run(case, v) for case in group])(x)
    for case, got in zip(group, outs):
        want = _array(case["output"])
        got = np.asarray(got)
        assert got.dtype == want.dtype and got.shape == want.shape, (case["method"], got.dtype)
        scale = max(1.0, float(np.max(np.abs(want), initial=0)))
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * scale,
                                   err_msg=f"{case['fn']} {case['method']} "
                                           f"antialias={case['antialias']}")


def test_resize_methods_and_names():
    assert [m.name for m in image.ResizeMethod] == ["NEAREST", "LINEAR", "LANCZOS3",
                                                    "LANCZOS5", "CUBIC", "CUBIC_PYTORCH",
                                                    "AREA"]
    for name, method in [("bilinear", "LINEAR"), ("trilinear", "LINEAR"),
                         ("triangle", "LINEAR"), ("tricubic", "CUBIC"),
                         ("bicubic-pytorch", "CUBIC_PYTORCH"), ("area", "AREA")]:
        assert image.ResizeMethod.from_string(name) is image.ResizeMethod[method]
    with pytest.raises(ValueError, match='Unknown resize method "x"'):
        image.resize(np.zeros(3), (2,), "x")
    with pytest.raises(ValueError, match="number of dimensions"):
        image.resize(np.zeros((3, 3)), (2,), "linear")
    with pytest.raises(ValueError, match="Nearest neighbor"):
        image.scale_and_translate(np.zeros(3), (3,), (0,), np.ones(1), np.zeros(1), "nearest")


def test_cubic_pytorch_keeps_the_border_two_pixels_past_the_edge_as_jax():
    # JAX 0.10.2's numbers: samples at input coordinates 2..7 of a 4-pixel signal, and
    # at -2..3; an output is 0 only where no border copy is within the kernel's reach.
    x = np.float32([1, 2, 4, 8])
    run = lc.jit(lambda t: image.scale_and_translate(x, (6,), (0,), np.float32([1.0]), t,
                                                     "cubic-pytorch", antialias=False))
    np.testing.assert_array_equal(np.asarray(run(np.float32([-2.0]))), [4, 8, 8, 8, 0, 0])
    np.testing.assert_array_equal(np.asarray(run(np.float32([2.0]))), [1, 1, 1, 2, 4, 8])
    np.testing.assert_allclose(np.asarray(run(np.float32([0.5]))),
                               [0.90625, 1.3125, 2.71875, 6.1875, 8.375, 8.0], rtol=1e-6)


_FIRST_PRINCIPLES = lc.jit(lambda flat, x, signal: (
    [image.resize(flat, (3, 7), m) for m in ("linear", "cubic", "lanczos3", "lanczos5", "area")],
    image.resize(x, (4, 6), "cubic"), image.resize(signal, (3,), "linear"),
    image.resize(signal, (3,), "area")))


def test_first_principles():
    flat = np.full((5, 4), 2.5, np.float32)
    x = np.random.default_rng(0).uniform(size=(4, 6)).astype(np.float32)
    signal = np.float32([0, 2, 4, 6, 8, 10])
    constants, same, linear, area = _FIRST_PRINCIPLES(flat, x, signal)
    for out in constants:  # normalised weights: a constant stays that constant
        np.testing.assert_allclose(np.asarray(out), 2.5, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(same), x, atol=1e-6)
    # Antialiased linear downsampling by 2 widens the triangle to radius 2: weights
    # 1/4, 3/4, 3/4, 1/4 around each output, renormalised where the edge cuts them off.
    np.testing.assert_allclose(np.asarray(linear), [(2 * 0.75 + 4 * 0.25) / 1.75, 5,
                                                    (6 * 0.25 + 8 * 0.75 + 10 * 0.75) / 1.75],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(area), [1, 5, 9], rtol=1e-6)
    assert image.resize(np.int32([[1, 2]]), (2, 2), "nearest").dtype == np.int32
    assert image.resize(np.zeros((0, 3), np.float32), (0, 5), "linear").shape == (0, 5)


def test_jit_grad_and_vmap():
    x = np.random.default_rng(1).uniform(size=(4, 5)).astype(np.float32)
    cubic = lambda v: image.resize(v, (3, 7), "cubic")  # noqa: E731
    check(cubic, [x], None, diff_argnums=(), vmap=False, jit_rtol=1e-5)
    # Derivatives of the compiled function: eagerly, each numerical step is many dispatches.
    check_derivatives(lc.jit(cubic), [x], (0,))
    batch = np.random.default_rng(2).uniform(size=(3, 4, 5)).astype(np.float32)
    lanczos = lambda v: image.resize(v, (2, 6), "lanczos3")  # noqa: E731
    one = lc.jit(lanczos)
    np.testing.assert_allclose(np.asarray(lc.vmap(lanczos)(batch)),
                               np.stack([np.asarray(one(b)) for b in batch]),
                               rtol=1e-5, atol=1e-6)

    @lc.jit
    def moved(scale, shift):  # differentiable in where the samples fall, too
        img = lnp.asarray(x, scale.dtype)
        return image.scale_and_translate(img, (4, 5), (0, 1), scale, shift, "linear").sum()

    check_derivatives(moved, [np.float32([0.8, 1.3]), np.float32([0.25, -0.2])], (0, 1),
                      rtol=1e-4, atol=1e-4)
    assert float(lnp.abs(lc.grad(moved)(np.float32([0.8, 1.3]), np.float32([0.25, -0.2]))
                         ).sum()) > 0
