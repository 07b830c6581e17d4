"""lamella.core: tracing, jaxprs and composable function transformations.

No compiler is needed: `jit` runs jaxprs with core's NumPy interpreter until a
higher layer (lamella.lax) registers the XLA executor.

>>> import numpy as np
>>> import lamella.core as lc
>>> from lamella.core.structural import reduce_sum
>>> lc.grad(lambda x: reduce_sum(x, (0,)))(np.ones(3, np.float32))
array([1., 1., 1.], dtype=float32)
"""

from lamella.core import ad, batching, partial_eval, tree, tree_util
from lamella.core.autodiff_api import (
                                   grad,
                                   hessian,
                                   jacfwd,
                                   jacrev,
                                   jvp,
                                   linearize,
                                   value_and_grad,
                                   vjp,
)
from lamella.core.avals import ShapedArray, ShapeDtypeStruct, get_aval
from lamella.core.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat, remat_p
from lamella.core.config import config, disable_jit, enable_x64
from lamella.core.custom_derivatives import (
                                   SymbolicZero,
                                   custom_jvp,
                                   custom_jvp_call_p,
                                   custom_vjp,
                                   custom_vjp_call_p,
)
from lamella.core.devices import block_until_ready, device_get, device_put, devices
from lamella.core.dispatch import register_executor
from lamella.core.dtypes import canonicalize_dtype, float0
from lamella.core.errors import (
                                   ConcretizationTypeError,
                                   JaxprTypeError,
                                   TracerArrayConversionError,
                                   TracerIntegerConversionError,
                                   UnexpectedTracerError,
)
from lamella.core.jaxpr import (
                                   ClosedJaxpr,
                                   Jaxpr,
                                   JaxprEqn,
                                   Literal,
                                   Var,
                                   check_jaxpr,
                                   eval_jaxpr,
                                   jaxpr_as_fun,
)
from lamella.core.jit import Compiled, JitFunction, Lowered, Traced, jit, jit_p
from lamella.core.make_jaxpr import eval_shape, make_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.structural import stop_gradient
from lamella.core.trace import Trace, Tracer
from lamella.core.vmap_api import vmap

__version__ = "0.1.0"

__all__ = [
    "ClosedJaxpr", "Compiled", "ConcretizationTypeError", "Jaxpr", "JaxprEqn", "JaxprTypeError",
    "JitFunction", "Literal", "Lowered", "Primitive", "ShapeDtypeStruct", "ShapedArray",
    "SymbolicZero", "Trace", "Traced", "Tracer", "TracerArrayConversionError",
    "TracerIntegerConversionError", "UnexpectedTracerError", "Var", "ad", "batching",
    "block_until_ready", "canonicalize_dtype", "check_jaxpr", "checkpoint", "checkpoint_name",
    "checkpoint_policies", "config", "custom_jvp", "custom_jvp_call_p", "custom_vjp",
    "custom_vjp_call_p", "device_get", "device_put", "devices", "disable_jit", "enable_x64",
    "eval_jaxpr", "eval_shape", "float0", "get_aval", "grad", "hessian", "jacfwd", "jacrev",
    "jaxpr_as_fun", "jit", "jit_p", "jvp", "linearize", "make_jaxpr", "partial_eval",
    "register_executor", "remat", "remat_p", "stop_gradient", "tree", "tree_util",
    "value_and_grad", "vjp", "vmap",
]
