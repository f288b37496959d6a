"""newtonad: automatic differentiation embedded in Newton solvers."""

__version__ = "0.1.0"
