"""lamella.core: tracing, jaxprs and composable function transformations.

No compiler is needed: `jit` runs jaxprs with core's NumPy interpreter until a
higher layer (lamella.lax) registers the XLA executor.

>>> import numpy as np
>>> import lamella.core as lc
>>> from lamella.core.structural import reduce_sum
>>> lc.grad(lambda x: reduce_sum(x, (0,)))(np.ones(3, np.float32))
array([1., 1., 1.], dtype=float32)
"""

from lamella.core import (
                                   ad,
                                   batching,
                                   checkify,
                                   custom_batching,
                                   debug,
                                   distributed,
                                   dlpack,
                                   dtypes,
                                   errors,
                                   export,
                                   multihost_utils,
                                   partial_eval,
                                   sharding,
                                   sharding_rules,
                                   stages,
                                   state,
                                   tree,
                                   tree_util,
                                   typing,
                                   version,
)
from lamella.core.array import Array
from lamella.core.autodiff_api import (
                                   fwd_and_bwd,
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
from lamella.core.avals import ShapedArray, ShapeDtypeStruct, array_types, get_aval, valid_jaxtype
from lamella.core.batching import mapped_aval, unmapped_aval
from lamella.core.call_rules import CallPrimitive, call_impl
from lamella.core.callbacks import io_callback, pure_callback
from lamella.core.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat, remat_p
from lamella.core.config import (
                                   allow_f16_reductions,
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
                                   enable_custom_prng,
                                   enable_x64,
                                   explain_cache_misses,
                                   jax2tf_associative_scan_reductions,
                                   legacy_prng_key,
                                   log_compiles,
                                   make_user_context,
                                   numpy_dtype_promotion,
                                   numpy_rank_promotion,
                                   softmax_custom_jvp,
                                   threefry_partitionable,
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
                                   clear_caches,
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
                                   make_array_from_single_device_arrays,
                                   print_environment_info,
                                   process_count,
                                   process_index,
                                   typeof,
)
from lamella.core.dispatch import register_executor
from lamella.core.dtypes import canonicalize_dtype, float0, primal_dtype_to_tangent_dtype
from lamella.core.effects import Effect, Effects, no_effects
from lamella.core.errors import (
                                   ConcretizationTypeError,
                                   JaxprTypeError,
                                   TracerArrayConversionError,
                                   TracerIntegerConversionError,
                                   UnexpectedTracerError,
)
from lamella.core.jaxpr import (
                                   ClosedJaxpr,
                                   DebugInfo,
                                   Jaxpr,
                                   JaxprEqn,
                                   Literal,
                                   Var,
                                   check_jaxpr,
                                   eval_jaxpr,
                                   jaxpr_as_fun,
)
from lamella.core.jaxpr_builders import DropVar, gensym, jaxprs_in_params, new_jaxpr_eqn, subjaxprs
from lamella.core.jaxpr_views import jaxpr_graph, jaxpr_svg
from lamella.core.jit import JitFunction, jit, jit_p
from lamella.core.make_jaxpr import eval_shape, make_jaxpr
from lamella.core.multihost_utils import (
                                   host_count,
                                   host_id,
                                   host_ids,
                                   make_array_from_process_local_data,
                                   process_indices,
)
from lamella.core.parallel import pmap, shard_map
from lamella.core.primitive import Primitive
from lamella.core.sharding import NamedSharding, P, make_mesh, reshard, set_mesh
from lamella.core.source_info import named_call, named_scope
from lamella.core.stages import Compiled, Lowered, Traced
from lamella.core.staging import ensure_compile_time_eval
from lamella.core.structural import stop_gradient
from lamella.core.trace import Trace, Tracer, TraceTag, set_current_trace
from lamella.core.trace_queries import (
                                   concrete_or_error,
                                   find_top_trace,
                                   get_opaque_trace_state,
                                   nonempty_axis_env_DO_NOT_USE,
                                   take_current_trace,
                                   unsafe_am_i_under_a_jit_DO_NOT_USE,
                                   unsafe_am_i_under_a_vmap_DO_NOT_USE,
                                   unsafe_get_axis_names_DO_NOT_USE,
)
from lamella.core.version import __version__, __version_info__
from lamella.core.vmap_api import vmap

__all__ = sorted(name for name in dir() if not name.startswith("_"))
