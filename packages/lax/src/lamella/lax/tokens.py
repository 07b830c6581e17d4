"""Tokens: values that order side effects in XLA programs (create_token, after_all).

A token has the abstract value `abstract_token` (printed `Tok`) and lowers to
`!stablehlo.token`. Outside a trace, `create_token()` and `after_all(...)`
return a `Token` object; under `jit` they stage `create_token` / `after_all`
equations. Tokens carry no data, so nothing differentiates through them.

>>> import lamella.core as lc
>>> print(lc.make_jaxpr(lambda: after_all(create_token(), create_token()))())
... # doctest: +NORMALIZE_WHITESPACE
{ lambda ; . let
    a:Tok = create_token
    b:Tok = create_token
    c:Tok = after_all a b
  in (c,) }
"""

from __future__ import annotations

from typing import Any

from lamella.core import Primitive, ad, avals, batching
from lamella.lax.lowering import hlo, ir_type_handlers, register_lowering, token_type

__all__ = ["AbstractToken", "Token", "abstract_token", "after_all", "after_all_p",
           "create_token", "create_token_p"]


class AbstractToken:
    """The abstract value of tokens."""

    shape: tuple[int, ...] = ()
    ndim = 0
    weak_type = False

    def str_short(self, short_dtypes: bool = True) -> str:
        return "Tok"

    def __repr__(self) -> str:
        return "AbstractToken()"

    def __eq__(self, other: object) -> bool:
        return type(other) is AbstractToken

    def __hash__(self) -> int:
        return hash(AbstractToken)

    def to_tangent_aval(self) -> AbstractToken:
        return self

    def strip_weak_type(self) -> AbstractToken:
        return self


abstract_token = AbstractToken()


class Token:
    """A token outside any trace: it orders nothing by itself."""

    def __repr__(self) -> str:
        return "Token()"


avals.pytype_aval_mappings[Token] = lambda token: abstract_token
ir_type_handlers[AbstractToken] = lambda aval: token_type()

# --- create_token ---------------------------------------------------------------
create_token_p = Primitive("create_token")


def create_token(_: Any = None) -> Any:
    """A fresh token (its argument, JAX's, is ignored).

    >>> create_token()
    Token()
    """
    return create_token_p.bind()


create_token_p.def_impl(Token)
create_token_p.def_abstract_eval(lambda: abstract_token)
register_lowering(create_token_p, lambda ctx: [hlo.after_all([])])

# --- after_all ------------------------------------------------------------------
after_all_p = Primitive("after_all")


def after_all(*operands: Any) -> Any:
    """A token that comes after every token in `operands` (a join of orders).

    >>> after_all(create_token(), create_token())
    Token()
    """
    return after_all_p.bind(*operands)


@after_all_p.def_abstract_eval
def _after_all_abstract_eval(*operands) -> AbstractToken:
    if any(a != abstract_token for a in operands):
        raise TypeError("after_all takes tokens only, got "
                        f"{', '.join(a.str_short() for a in operands)}")
    return abstract_token


after_all_p.def_impl(lambda *tokens: Token())
register_lowering(after_all_p, lambda ctx, *tokens: [hlo.after_all(list(tokens))])
ad.defjvp_zero(after_all_p)
batching.primitive_batchers[after_all_p] = lambda args, dims: (after_all_p.bind(*args), None)
