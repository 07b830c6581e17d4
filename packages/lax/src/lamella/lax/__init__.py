"""lamella.lax: primitives with all their rules, StableHLO lowering, the XLA runtime.

Importing it registers the XLA executor with lamella.core, so `jit` compiles
with XLA and lax primitives applied eagerly run as one-equation XLA programs.
Names, parameters and semantics follow `jax.lax`.

>>> import lamella.lax as lax
>>> lax.add(lax.full((3,), 1.0, "float32"), 2.0)
Array([3., 3., 3.], dtype=float32)
"""

import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # keep jaxlib's info logs quiet

from jaxlib._jax import SingleDeviceSharding as _jax_single_device_sharding  # noqa: E402

from lamella.core import Array as _CoreArray  # noqa: E402
from lamella.core import Device as _CoreDevice  # noqa: E402
from lamella.core import ShapedArray as _ShapedArray  # noqa: E402
from lamella.core import avals as _avals  # noqa: E402
from lamella.core import config as _config  # noqa: E402
from lamella.core import errors as _core_errors  # noqa: E402
from lamella.core import register_executor as _register_executor  # noqa: E402
from lamella.core import tree_util as _tree_util  # noqa: E402
from lamella.core.parallel import register_parallel as _register_parallel  # noqa: E402
from lamella.core.sharding import (  # noqa: E402
    register_single_device_sharding as _register_single_device_sharding,
)
from lamella.core.source_info import register_internal_path as _internal  # noqa: E402
from lamella.core.structural import (  # noqa: E402
    broadcast_in_dim_p,
    reshape_p,
    stop_gradient,
    stop_gradient_p,
    transpose_p,
)
from lamella.lax import core_lowerings as _core_lowerings  # noqa: E402, F401
from lamella.lax import explicit_sharding as _explicit_sharding  # noqa: E402
from lamella.lax import flags as _flags  # noqa: E402
from lamella.lax import (
    linalg,  # noqa: E402  (jax.lax.linalg: an attribute, as in JAX)
    state_rules,  # noqa: E402,F401  (discharge rules for refs)
)
from lamella.lax import runtime as _runtime  # noqa: E402
from lamella.lax import spmd_collectives as _spmd_collectives  # noqa: E402, F401
from lamella.lax.arithmetic import (  # noqa: E402
    abs,
    abs_p,
    add,
    add_p,
    complex,
    complex_p,
    conj,
    conj_p,
    div,
    div_p,
    imag,
    imag_p,
    integer_pow,
    integer_pow_p,
    max,
    max_p,
    min,
    min_p,
    mul,
    mul_p,
    mulhi,
    mulhi_p,
    neg,
    neg_p,
    real,
    real_p,
    reciprocal,
    rem,
    rem_p,
    sign,
    sign_p,
    square,
    square_p,
    sub,
    sub_p,
)
from lamella.lax.composite import composite, composite_p  # noqa: E402
from lamella.lax.contraction import (  # noqa: E402
    DotAlgorithm,
    DotAlgorithmPreset,
    DotDimensionNumbers,
    Precision,
    PrecisionLike,
    batch_matmul,
    dot,
    dot_general,
    dot_general_p,
)
from lamella.lax.control_flow import (  # noqa: E402
    associative_scan,
    cond,
    cond_p,
    custom_linear_solve,
    custom_root,
    fori_loop,
    linear_solve_p,
    map,
    platform_dependent,
    scan,
    scan_p,
    switch,
    while_loop,
    while_p,
)
from lamella.lax.conv_variants import (  # noqa: E402
    conv_general_dilated_local,
    conv_general_dilated_patches,
    conv_general_shape_tuple,
    conv_shape_tuple,
    conv_transpose,
    conv_transpose_shape_tuple,
)
from lamella.lax.conversion import (  # noqa: E402
    bitcast_convert_type,
    bitcast_convert_type_p,
    convert_element_type,
    convert_element_type_p,
    dtype,
    reduce_precision,
    reduce_precision_p,
)
from lamella.lax.convolution import (  # noqa: E402
    ConvDimensionNumbers,
    ConvGeneralDilatedDimensionNumbers,
    conv,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_general_dilated_p,
    conv_general_permutations,
    conv_with_general_padding,
    padtype_to_pads,
)
from lamella.lax.executor import XlaExecutor as _XlaExecutor  # noqa: E402
from lamella.lax.fft import FftType, fft, fft_p  # noqa: E402
from lamella.lax.fill import empty, full, full_like, zeros_like_array  # noqa: E402
from lamella.lax.identities import (  # noqa: E402
    copy,
    copy_p,
    dce_sink,
    dce_sink_p,
    device_put_p,
    stage,
    stage_p,
)
from lamella.lax.indexing import (  # noqa: E402
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    gather_p,
    index_take,
    scatter,
    scatter_add,
    scatter_add_p,
    scatter_apply,
    scatter_max,
    scatter_max_p,
    scatter_min,
    scatter_min_p,
    scatter_mul,
    scatter_mul_p,
    scatter_p,
    scatter_sub,
    scatter_sub_p,
)
from lamella.lax.logical import (  # noqa: E402  # noqa: E402
    and_p,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    clamp_p,
    clz,
    clz_p,
    eq,
    eq_p,
    eq_to_p,
    ge,
    ge_p,
    gt,
    gt_p,
    le,
    le_p,
    le_to_p,
    lt,
    lt_p,
    lt_to_p,
    ne,
    ne_p,
    not_p,
    or_p,
    population_count,
    population_count_p,
    select,
    select_n,
    select_n_p,
    shift_left,
    shift_left_p,
    shift_right_arithmetic,
    shift_right_arithmetic_p,
    shift_right_logical,
    shift_right_logical_p,
    xor_p,
)
from lamella.lax.optimization_barrier import (  # noqa: E402
    optimization_barrier,
    optimization_barrier_p,
)
from lamella.lax.parallel import (  # noqa: E402
    all_gather,
    all_gather_p,
    all_to_all,
    all_to_all_p,
    axis_index,
    axis_index_p,
    axis_size,
    pcast,
    pmax,
    pmax_p,
    pmean,
    pmin,
    pmin_p,
    ppermute,
    ppermute_p,
    pshuffle,
    psum,
    psum_p,
    psum_scatter,
    pswapaxes,
    reduce_scatter_p,
)
from lamella.lax.pmap import pmap as _pmap  # noqa: E402
from lamella.lax.ragged_dot import (  # noqa: E402
    RaggedDotDimensionNumbers,
    ragged_dot,
    ragged_dot_general,
    scaled_dot,
)
from lamella.lax.random_bits import (  # noqa: E402
    RandomAlgorithm,
    rng_bit_generator,
    rng_bit_generator_p,
    rng_uniform,
    rng_uniform_p,
    threefry2x32,
    threefry2x32_p,
)
from lamella.lax.reductions import (  # noqa: E402
    argmax,
    argmax_p,
    argmin,
    argmin_p,
    cumlogsumexp,
    cumlogsumexp_p,
    cummax,
    cummax_p,
    cummin,
    cummin_p,
    cumprod,
    cumprod_p,
    cumsum,
    cumsum_p,
    reduce,
    reduce_and,
    reduce_and_p,
    reduce_max,
    reduce_max_p,
    reduce_min,
    reduce_min_p,
    reduce_or,
    reduce_or_p,
    reduce_p,
    reduce_prod,
    reduce_prod_p,
    reduce_sum,
    reduce_sum_p,
    reduce_xor,
    reduce_xor_p,
)
from lamella.lax.rounding import (  # noqa: E402
    RoundingMethod,
    ceil,
    ceil_p,
    floor,
    floor_p,
    is_finite,
    is_finite_p,
    nextafter,
    nextafter_p,
    round,
    round_p,
)
from lamella.lax.runtime import (  # noqa: E402
    Array,
    block_until_ready,
    device_count,
    device_get,
    device_put,
    devices,
)
from lamella.lax.shapes import (  # noqa: E402
    broadcast,
    broadcast_in_dim,
    broadcast_like,
    broadcast_shapes,
    broadcast_to_rank,
    broadcasted_iota,
    collapse,
    concatenate,
    concatenate_p,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_slice_p,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    dynamic_update_slice_p,
    expand_dims,
    index_in_dim,
    iota,
    iota_p,
    pad,
    pad_p,
    reshape,
    rev,
    rev_p,
    shape_as_value,
    slice,
    slice_in_dim,
    slice_p,
    split,
    split_p,
    squeeze,
    squeeze_p,
    transpose,
)
from lamella.lax.shard_map import shard_map as _shard_map  # noqa: E402
from lamella.lax.sharding_constraint import (  # noqa: E402
    sharding_constraint_p,
    with_sharding_constraint,
)
from lamella.lax.sorting import (  # noqa: E402
    approx_max_k,
    approx_min_k,
    approx_top_k_p,
    sort,
    sort_key_val,
    sort_p,
    top_k,
    top_k_p,
)
from lamella.lax.special import (  # noqa: E402
    bessel_i0e,
    bessel_i0e_p,
    bessel_i1e,
    bessel_i1e_p,
    betainc,
    digamma,
    digamma_p,
    erf,
    erf_inv,
    erf_inv_p,
    erf_p,
    erfc,
    erfc_p,
    igamma,
    igamma_grad_a,
    igamma_grad_a_p,
    igamma_p,
    igammac,
    igammac_p,
    lgamma,
    lgamma_p,
    polygamma,
    polygamma_p,
    random_gamma_grad,
    random_gamma_grad_p,
    regularized_incomplete_beta_p,
    zeta,
    zeta_p,
)
from lamella.lax.stacking import stack, stack_p, tile, tile_p, unstack, unstack_p  # noqa: E402
from lamella.lax.tokens import after_all, after_all_p, create_token, create_token_p  # noqa: E402
from lamella.lax.transcendental import (  # noqa: E402
    AccuracyMode,
    Tolerance,
    acos,
    acos_p,
    acosh,
    acosh_p,
    asin,
    asin_p,
    asinh,
    asinh_p,
    atan,
    atan2,
    atan2_p,
    atan_p,
    atanh,
    atanh_p,
    cbrt,
    cbrt_p,
    cos,
    cos_p,
    cosh,
    cosh_p,
    exp,
    exp2,
    exp2_p,
    exp_p,
    expm1,
    expm1_p,
    log,
    log1p,
    log1p_p,
    log_p,
    logistic,
    logistic_p,
    pow,
    pow_p,
    rsqrt,
    rsqrt_p,
    sin,
    sin_p,
    sinh,
    sinh_p,
    sqrt,
    sqrt_p,
    tan,
    tan_p,
    tanh,
    tanh_p,
)
from lamella.lax.windows import (  # noqa: E402
    reduce_window,
    reduce_window_max_p,
    reduce_window_min_p,
    reduce_window_p,
    reduce_window_shape_tuple,
    reduce_window_sum_p,
    select_and_gather_add,
    select_and_gather_add_p,
    select_and_scatter_add,
    select_and_scatter_add_p,
    select_and_scatter_p,
)

__version__ = "0.1.0"

_internal(_os.path.dirname(__file__))
_runtime.set_aval_factory(lambda shape, dtype_, weak: _ShapedArray(shape, dtype_, weak))
_avals.pytype_aval_mappings[Array] = _explicit_sharding.array_aval
_avals.array_types.add(Array)
_runtime.set_x64(_config.read("enable_x64"))
_runtime.set_disable_jit(_config.read("disable_jit"))
_flags.mirror_config_in_jaxlib()
from lamella.lax import checkify_rules as _checkify_rules  # noqa: E402, F401  (after all primitives)
from lamella.lax import exported_call as _exported_call  # noqa: E402, F401  (export's runtime half)

_explicit_sharding.register_rules()  # after all primitives

_tree_util.on_register(_runtime.register_pytree_node)  # custom pytrees stay on the C++ path
_core_errors.JaxRuntimeError = _runtime.XlaRuntimeError  # what XLA raises
_CoreArray.register(Array)
_CoreDevice.register(_runtime.Device)
_register_single_device_sharding(_jax_single_device_sharding, _runtime.sharding_for)
_register_parallel("shard_map", _shard_map)
_register_parallel("pmap", _pmap)
_register_executor(_XlaExecutor())
