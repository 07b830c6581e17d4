"""`lamella.core.export` — JAX's `jax.export`: functions lowered to StableHLO, stored as
bytes in JAX 0.10.2's format, and called again (in this process, another one, or JAX).

(needs lamella.lax to lower; tests/test_export.py runs it)

>>> import numpy as np  # doctest: +SKIP
>>> import lamella.core as lc  # doctest: +SKIP
>>> import lamella.lax as lax  # doctest: +SKIP
>>> from lamella.core import export  # doctest: +SKIP
>>> exp = export.export(lc.jit(lax.sin))(lc.ShapeDtypeStruct((2,), np.float32))  # doctest: +SKIP
>>> blob = exp.serialize()  # doctest: +SKIP
>>> export.deserialize(blob).call(np.zeros(2, np.float32))  # doctest: +SKIP
Array([0., 0.], dtype=float32)
"""

from lamella.core.export.exported import (
    DisabledSafetyCheck,
    ExportBackend,
    Exported,
    is_symbolic,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_backend,
)
from lamella.core.export.exporting import default_export_platform, export
from lamella.core.export.serialization import (
    deserialize,
    register_namedtuple_serialization,
    register_pytree_node_serialization,
    serialize,
)
from lamella.core.shape_poly import (
    DimExpr,
    InconclusiveDimensionOperation,
    SymbolicScope,
    is_symbolic_dim,
    symbolic_args_specs,
    symbolic_shape,
)

__all__ = [
    "Exported",
    "ExportBackend",
    "export",
    "serialize",
    "deserialize",
    "default_export_platform",
    "minimum_supported_calling_convention_version",
    "maximum_supported_calling_convention_version",
    "register_backend",
    "symbolic_shape",
    "symbolic_args_specs",
    "SymbolicScope",
    "DimExpr",
    "InconclusiveDimensionOperation",
    "is_symbolic",
    "is_symbolic_dim",
    "DisabledSafetyCheck",
    "register_pytree_node_serialization",
    "register_namedtuple_serialization",
]
