"""einsum and einsum_path against NumPy: fixed and hypothesis-generated subscripts,
ellipses, diagonals, implicit output, the sublist form, dtypes, the optimize
choices, derivatives, vmap, jit, and errors naming the bad operand."""

import importlib

import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.numpy.einsum import einsum, einsum_path

# The module itself: the package attribute `einsum` is the function.
einsum_module = importlib.import_module("lamella.numpy.einsum")

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def assert_matches(got, want, dtype=np.float32, tol=2e-5):
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),           # implicit output
    ("ba", [(2, 3)]),                       # implicit output is sorted: a transpose
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->ji", [(2, 2, 3)]),
    ("iii->i", [(2, 2, 2)]),
    ("ij->", [(2, 3)]),
    ("ij,k->", [(2, 3), (4,)]),             # every index summed out of its own operand
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]),    # a diagonal feeding a contraction
    ("ij,ij->ij", [(2, 3), (1, 3)]),        # size-1 broadcasting of a named index
    ("i,j", [(2,), (3,)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("", [()]),
    (",", [(), ()]),
    ("i,i", [(0,), (0,)]),
    ("ij,jk", [(2, 0), (0, 3)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("...,...", [(2, 3), (3,)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,cd,da", [(2, 3), (3, 4), (4, 2), (2, 2)]),
    ("ij,ij,ij->i", [(2, 3), (2, 3), (2, 3)]),
]


@pytest.mark.parametrize("subscripts, shapes", CASES, ids=[c[0] or "empty" for c in CASES])
def test_matches_numpy(subscripts, shapes):
    operands = [rand(*s) for s in shapes]
    assert_matches(einsum(subscripts, *operands), np.einsum(subscripts, *operands))


@pytest.mark.parametrize("optimize", ["greedy", "optimal", True, False,
                                      [(1, 2), (0, 1)], ["einsum_path", (0, 1), (0, 1)]])
def test_optimize_choices_agree(optimize):
    a, b, c = rand(2, 3), rand(3, 4), rand(4, 5)
    want = np.einsum("ij,jk,kl->il", a, b, c)
    assert_matches(einsum("ij,jk,kl->il", a, b, c, optimize=optimize), want)


@st.composite
def random_einsum(draw):
    """Valid subscripts over letters a-e with consistent sizes (1 included), 1-3
    operands of rank 0-3 (repeated letters allowed), explicit or implicit output."""
    sizes = {c: draw(st.integers(1, 3)) for c in "abcde"}
    terms = draw(st.lists(st.lists(st.sampled_from("abcde"), max_size=3), min_size=1,
                          max_size=3))
    used = sorted({c for term in terms for c in term})
    if draw(st.booleans()):
        output = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        subscripts = ",".join("".join(t) for t in terms) + "->" + output
    else:
        subscripts = ",".join("".join(t) for t in terms)
    shapes = [tuple(sizes[c] for c in term) for term in terms]
    return subscripts, shapes


@settings(max_examples=15, deadline=None)
@given(random_einsum())
def test_random_subscripts_match_numpy(case):
    subscripts, shapes = case
    operands = [rand(*s) for s in shapes]
    assert_matches(einsum(subscripts, *operands), np.einsum(subscripts, *operands), tol=1e-4)


def test_sublist_form():
    a, b = rand(2, 3), rand(3, 4)
    assert_matches(einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    assert_matches(einsum(a, [0, 1], b, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    assert_matches(einsum(a, [Ellipsis, 1], b, [1, 30], [Ellipsis, 30]), a @ b)
    # Labels order the implicit output numerically, as in NumPy (30 after 2).
    assert_matches(einsum(a, [30, 2]), np.einsum(a, [30, 2]))


def test_integer_bool_and_half_dtypes():
    x, y = np.int32([[1, -2, 3], [4, 5, -6]]), np.int32([[2, 0], [1, 1], [-1, 3]])
    np.testing.assert_array_equal(einsum("ij,jk", x, y), x @ y)
    assert einsum("ij,jk", x, y).dtype == np.int32
    # int8 wraps like NumPy, unless the accumulation dtype is wider.
    big = np.int8([[100, 100]])
    np.testing.assert_array_equal(einsum("ij,ji", big, big.T), np.einsum("ij,ji", big, big.T))
    wide = einsum("ij,ji", big, big.T, preferred_element_type=np.int32)
    assert wide.dtype == np.int32 and int(wide) == 20000
    assert einsum("i,i", np.int8([1]), np.uint8([1])).dtype == np.int16
    p, q = np.array([[True, False], [False, False]]), np.array([[True, True], [False, True]])
    for subscripts in ["ij,jk->ik", "ij->i", "ii", "ij,ij->"]:
        ops = (p, q) if "," in subscripts else (p,)
        got = einsum(subscripts, *ops)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, np.einsum(subscripts, *ops))
    h = rand(2, 3, dtype=np.float16)
    assert_matches(einsum("ij,kj->ik", h, h), np.einsum("ij,kj->ik", h, h), np.float16, 1e-2)


def test_promotion_and_weak_types():
    assert einsum("i,i", np.int32([1, 2]), np.float32([1, 2])).dtype == np.float32
    assert einsum("i,", np.float16([1, 2]), 2.0).dtype == np.float16
    scalar = einsum(",", 2.0, 3)
    assert scalar.dtype == np.float32 and scalar.aval.weak_type and float(scalar) == 6.0
    preferred = einsum("i,i", np.int8([1, 2]), np.int8([3, 4]), preferred_element_type=np.float32)
    assert preferred.dtype == np.float32 and float(preferred) == 11.0


def test_uses_one_dot_general_per_pairwise_step_and_caches_the_path():
    calls = []

    def counting(*args, **kwargs):
        calls.append(args[2])
        return lax.dot_general(*args, **kwargs)

    a, b, c = rand(2, 3), rand(3, 4), rand(4, 5)
    before = einsum_module._contraction_steps.cache_info().hits
    einsum("ij,jk,kl->il", a, b, c, _dot_general=counting)
    einsum("ij,jk,kl->il", a, b, c, _dot_general=counting)
    assert len(calls) == 4
    assert einsum_module._contraction_steps.cache_info().hits >= before + 1


def test_einsum_path():
    import opt_einsum

    a, b, c = rand(2, 3), rand(3, 4), rand(4, 5)
    path, info = einsum_path("ij,jk,kl->il", a, b, c, optimize="optimal")
    assert path == opt_einsum.contract_path("ij,jk,kl->il", a, b, c, optimize="optimal")[0]
    assert "ij,jk,kl->il" in str(info)
    assert_matches(einsum("ij,jk,kl->il", a, b, c, optimize=path), a @ b @ c, tol=1e-4)


# --- transformations --------------------------------------------------------------------
TRANSFORM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 2)]),
    ("iij,j->ji", [(2, 2, 3), (3,)]),
    ("...i,...i->...", [(2, 3), (3,)]),
]


@pytest.mark.parametrize("subscripts, shapes", TRANSFORM_CASES,
                         ids=[c[0] for c in TRANSFORM_CASES])
def test_grads_vmap_and_jit(subscripts, shapes):
    operands = [rand(*s) for s in shapes]
    check(lambda *ops: einsum(subscripts, *ops), operands,
          lambda *ops: np.einsum(subscripts, *ops), diff_argnums=(0, 1),
          rtol=1e-5, atol=1e-5)


def test_three_operand_grad_and_vmap():
    ops = [rand(2, 3), rand(3, 2), rand(2)]
    check(lambda a, b, c: einsum("ij,jk,k->i", a, b, c), ops,
          lambda a, b, c: np.einsum("ij,jk,k->i", a, b, c), diff_argnums=(0, 2),
          rtol=1e-5, atol=1e-5, vmap=False)
    batched = rand(4, 3, 2)
    out = lc.vmap(lambda b: einsum("ij,jk,k->i", ops[0], b, ops[2]))(batched)
    want = np.stack([np.einsum("ij,jk,k->i", ops[0], b, ops[2]) for b in batched])
    assert_matches(out, want)


# --- errors -----------------------------------------------------------------------------
ERRORS = [
    ("ij,jk", [(2, 3), (4, 5)], r"index 'j' has size 3 in operand 0 but size 4 in operand 1"),
    ("ij", [(2, 3, 4)], r"operand 0 has 3 dimensions .* subscripts 'ij' name 2"),
    ("ij,j", [(2, 3)], r"describe 2 operand\(s\) but 1 were given"),
    ("ii", [(2, 3)], r"index 'i' is repeated in operand 0 .* sizes 2 and 3"),
    ("i,i2", [(2,), (2, 2)], r"operand 1 contain '2'"),
    ("ij->z", [(2, 3)], r"output index 'z' does not occur"),
    ("ij->ii", [(2, 3)], r"output index 'i' is repeated"),
    ("...i,...i", [(2, 3), (4, 3)], r"under '...' do not broadcast"),
    ("i,...i...", [(2,), (2, 2)], r"operand 1"),
]


@pytest.mark.parametrize("subscripts, shapes, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_mistake(subscripts, shapes, message):
    with pytest.raises(ValueError, match=message):
        einsum(subscripts, *[np.ones(s, np.float32) for s in shapes])


def test_other_errors():
    x = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="sublist labels"):
        einsum(x, [0, 99])
    with pytest.raises(TypeError, match="list of integers"):
        einsum(x, "ij")
    with pytest.raises(NotImplementedError, match="out"):
        einsum("ij", x, out=x)
    with pytest.raises(TypeError, match="einsum"):
        einsum("i", [1.0, 2.0])
