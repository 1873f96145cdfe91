"""stitchgen's version (one place: the package, artifacts and golden headers read it)."""

__version__ = "0.1.0"
