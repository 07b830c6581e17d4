"""lamella.core: tracing, jaxprs and composable function transformations.

No compiler is needed: `jit` runs jaxprs with core's NumPy interpreter until a
higher layer (lamella.lax) registers the XLA executor.

>>> import numpy as np
>>> import lamella.core as lc
>>> from lamella.core.structural import reduce_sum
>>> lc.grad(lambda x: reduce_sum(x, (0,)))(np.ones(3, np.float32))
array([1., 1., 1.], dtype=float32)
"""

from lamella.core import ad, batching, dtypes, errors, partial_eval, stages, tree, tree_util
from lamella.core.array import Array
from lamella.core.autodiff_api import (
                                   grad,
                                   hessian,
                                   jacfwd,
                                   jacobian,
                                   jacrev,
                                   jvp,
                                   linear_transpose,
                                   linearize,
                                   value_and_grad,
                                   vjp,
)
from lamella.core.avals import ShapedArray, ShapeDtypeStruct, get_aval
from lamella.core.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat, remat_p
from lamella.core.config import (
                                   check_tracer_leaks,
                                   checking_leaks,
                                   config,
                                   debug_infs,
                                   debug_nans,
                                   default_device,
                                   default_matmul_precision,
                                   default_prng_impl,
                                   disable_jit,
                                   enable_checks,
                                   enable_x64,
                                   explain_cache_misses,
                                   log_compiles,
                                   numpy_dtype_promotion,
                                   numpy_rank_promotion,
                                   transfer_guard,
                                   transfer_guard_device_to_device,
                                   transfer_guard_device_to_host,
                                   transfer_guard_host_to_device,
)
from lamella.core.custom_derivatives import (
                                   SymbolicZero,
                                   closure_convert,
                                   custom_gradient,
                                   custom_jvp,
                                   custom_jvp_call_p,
                                   custom_vjp,
                                   custom_vjp_call_p,
)
from lamella.core.devices import (
                                   Device,
                                   block_until_ready,
                                   copy_to_host_async,
                                   default_backend,
                                   device_count,
                                   device_get,
                                   device_put,
                                   devices,
                                   live_arrays,
                                   local_device_count,
                                   local_devices,
                                   make_array_from_callback,
                                   print_environment_info,
                                   typeof,
)
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
from lamella.core.jit import JitFunction, jit, jit_p
from lamella.core.make_jaxpr import eval_shape, make_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.source_info import named_call, named_scope
from lamella.core.stages import Compiled, Lowered, Traced
from lamella.core.staging import ensure_compile_time_eval
from lamella.core.structural import stop_gradient
from lamella.core.trace import Trace, Tracer
from lamella.core.vmap_api import vmap

__version__ = "0.1.0"

__all__ = sorted(name for name in dir() if not name.startswith("_"))
