"""Sessions: one per package (that package and its declared lamella dependencies
only), all tests, lint, bench and demo. Lower layers are installed from their
folders in the same command, never by name from the index."""

import os

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["lint", "core", "tests", "bench_quick"]

PYTHON = "3.11"
TEST_DEPS = ["pytest>=8", "pytest-xdist>=3", "hypothesis>=6.100"]
DEMO_DEPS = ["scikit-learn>=1.3", "tqdm>=4.60"]  # the digits dataset and a progress bar
# Each package and the lamella packages it depends on, lowest first.
LAYERS = {
    "core": ["core"],
    "lax": ["core", "lax"],
    "numpy_api": ["core", "lax", "numpy_api"],
    "scipy_api": ["core", "lax", "numpy_api", "scipy_api"],
    "nn": ["core", "lax", "numpy_api", "nn"],
    "pallas": ["core", "lax", "numpy_api", "pallas"],
}


def hypothesis_seed() -> list[str]:
    """nox (and so CI) draws hypothesis examples from a fixed seed, so that a run
    passes or fails the same way on every clone; LAMELLA_HYPOTHESIS_SEED picks
    another seed, or "random" to explore as a plain pytest run does."""
    seed = os.environ.get("LAMELLA_HYPOTHESIS_SEED", "0")
    return [] if seed == "random" else [f"--hypothesis-seed={seed}"]


def install_layers(session: nox.Session, package: str) -> None:
    folders = []
    for layer in LAYERS[package]:
        folders += ["-e", f"./packages/{layer}"]
    session.install(*folders, *TEST_DEPS)


def run_package_tests(session: nox.Session, package: str) -> None:
    session.run("pytest", f"packages/{package}/tests", "--doctest-modules",
                f"packages/{package}/src", "--rootdir", f"packages/{package}", "-n", "auto", "-q",
                *hypothesis_seed(), *session.posargs)
    if package == "lax":  # 8 CPU devices must be set before lamella starts: a run of its own
        session.run("pytest", "packages/lax/tests/multidevice", "--rootdir", "packages/lax",
                    "-n", "auto", "-q", *hypothesis_seed(), *session.posargs)


@nox.session(python=PYTHON)
def core(session: nox.Session) -> None:
    """lamella-core alone: proves it runs with no jaxlib installed."""
    install_layers(session, "core")
    session.run("python", "-c", "import importlib.util, sys; "
                "sys.exit('jaxlib must not be installed here' if importlib.util.find_spec("
                "'jaxlib') else 0)")
    run_package_tests(session, "core")


@nox.session(python=PYTHON)
def lax(session: nox.Session) -> None:
    """lamella-lax with lamella-core only."""
    install_layers(session, "lax")
    run_package_tests(session, "lax")


@nox.session(python=PYTHON)
def numpy_api(session: nox.Session) -> None:
    """lamella-numpy with the layers below it only."""
    install_layers(session, "numpy_api")
    run_package_tests(session, "numpy_api")


@nox.session(python=PYTHON)
def scipy_api(session: nox.Session) -> None:
    """lamella-scipy with the layers below it only."""
    install_layers(session, "scipy_api")
    run_package_tests(session, "scipy_api")


@nox.session(python=PYTHON)
def nn(session: nox.Session) -> None:
    """lamella-nn with the layers below it only."""
    install_layers(session, "nn")
    run_package_tests(session, "nn")


@nox.session(python=PYTHON)
def pallas(session: nox.Session) -> None:
    """lamella-pallas with the layers below it only."""
    install_layers(session, "pallas")
    run_package_tests(session, "pallas")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Every package installed together: each package's tests, then the cross-layer tests.

    One pytest run per package, each with its own configuration (rootdir, the
    tests' helper modules); core's tests select core's interpreter themselves, so
    they hold with lamella.lax loaded too.
    """
    folders = []
    for package in LAYERS:
        folders += ["-e", f"./packages/{package}"]
    session.install(*folders, *TEST_DEPS, *DEMO_DEPS)  # tests/ runs the demo's training
    for package in LAYERS:
        run_package_tests(session, package)
    session.run("pytest", "tests", "-n", "auto", "-q", *hypothesis_seed(), *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, and no import cycle among the modules of any package."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("python", "tools/import_cycles.py")


def install_for_benchmarks(session: nox.Session) -> None:
    folders = []
    for package in LAYERS:
        folders += ["-e", f"./packages/{package}"]
    # bench_random times the demo's step; JAX's export serializes with flatbuffers.
    session.install(*folders, "jax==0.10.2", "flatbuffers", *DEMO_DEPS)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmarks against NumPy and, side by side, JAX (installed here for comparison).

    `nox -s bench -- --quick` runs each benchmark once at tiny sizes;
    `nox -s bench -- numpy random` runs the modules whose names contain those words.
    """
    install_for_benchmarks(session)
    session.run("python", "benchmarks/run.py", *session.posargs)


@nox.session(python=PYTHON)
def bench_quick(session: nox.Session) -> None:
    """Every benchmark once at tiny sizes (part of `nox`, so a broken benchmark fails CI)."""
    install_for_benchmarks(session)
    session.run("python", "benchmarks/run.py", "--quick", *session.posargs)


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The README's demo: an MLP learns scikit-learn's digits (bundled, no download)."""
    folders = []
    for package in LAYERS:
        folders += ["-e", f"./packages/{package}"]
    session.install(*folders, *DEMO_DEPS)
    session.run("python", "demo/demo.py", *session.posargs)


@nox.session(python=PYTHON)
def transformer(session: nox.Session) -> None:
    """A character-level transformer trained on Python's bundled documentation text."""
    install_layers(session, "nn")
    session.install("tqdm>=4.60")
    session.run("python", "demo/transformer.py", *session.posargs)
