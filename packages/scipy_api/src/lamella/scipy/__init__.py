"""lamella.scipy: `jax.scipy` on lamella.numpy — special functions, statistics,
linear algebra, optimization, signal processing and more.

Every function is a composition of lamella.numpy and lamella.lax operations,
so all of it works under `jit`, `grad` and `vmap`.
"""

__version__ = "0.1.0"

# As in JAX, `spatial` is not imported here: `import lamella.scipy.spatial.transform`
# reaches it.
from lamella.scipy import cluster as cluster
from lamella.scipy import fft as fft
from lamella.scipy import integrate as integrate
from lamella.scipy import interpolate as interpolate
from lamella.scipy import linalg as linalg
from lamella.scipy import ndimage as ndimage

# JAX loads `optimize` lazily; here `import lamella.scipy` brings it too.
from lamella.scipy import optimize as optimize
from lamella.scipy import signal as signal
from lamella.scipy import sparse as sparse
from lamella.scipy import special as special
from lamella.scipy import stats as stats
