"""`platform_dependent`: one branch per platform, chosen when the program is lowered.

`platform_index_p` stands for "which branch serves the platform this program
is compiled for": its lowering is that index as a constant, so the `cond`
over the branches folds away in the compiler. Applied eagerly (outside any
trace), the index is concrete and only the chosen branch runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lamella.core import ShapedArray
from lamella.core.trace import Tracer
from lamella.lax.control_flow.cond import _bind_branches
from lamella.lax.lowering import constant, register_lowering
from lamella.lax.standard import standard_primitive

__all__ = ["platform_dependent", "platform_index_p"]

platform_index_p = standard_primitive("platform_index")


@platform_index_p.def_abstract_eval
def _platform_index_abstract_eval(*, platforms) -> ShapedArray:
    return ShapedArray((), np.dtype(np.int32))


def _platform_index_lowering(ctx, *, platforms):
    for i, names in enumerate(platforms):
        if names is None or ctx.platform in names:
            return [constant(np.int32(i))]
    listed = ", ".join(name for names in platforms if names for name in names)
    raise ValueError(f"lax.platform_dependent has no branch for platform '{ctx.platform}' "
                     f"(branches for: {listed}) and no default: pass `default=`.")


register_lowering(platform_index_p, _platform_index_lowering)


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable) -> Any:
    """`per_platform[p](*args)` for the platform `p` the computation is compiled for
    ('cpu', 'cuda', 'rocm', 'tpu'), or `default(*args)` for a platform not named.
    Every branch is traced (as for `switch`); the choice is made when lowering.

    >>> import lamella.lax as lax
    >>> platform_dependent(np.float32(2), cpu=lambda x: lax.mul(x, 10.0), default=lax.neg)
    Array(20., dtype=float32)
    """
    groups: list[tuple[list[str], Callable]] = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the '{name}' branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for names, other in groups:  # one branch per distinct function
            if other is branch:
                names.append(name)
                break
        else:
            groups.append(([name], branch))
    platforms: tuple = tuple(tuple(names) for names, _ in groups)
    branches = [branch for _, branch in groups]
    if default is not None:
        if not callable(default):
            raise TypeError("lax.platform_dependent: the 'default' branch must be a callable.")
        platforms, branches = (*platforms, None), [*branches, default]
    index = platform_index_p.bind(platforms=platforms)
    if not isinstance(index, Tracer):
        return branches[int(index)](*args)
    # A switch, less its clamp: the index is in range by construction.
    return _bind_branches("platform_dependent", index, tuple(branches), args,
                          labels=tuple(f"the {names or 'default'} branch" for names in platforms))
