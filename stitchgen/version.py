"""stitchgen's version (one place: the package, artifacts and golden headers
read it), and torch's as everything we write records it."""

__version__ = "0.1.0"


def torch_version() -> str:
    """``2.13.0`` for ``2.13.0+cpu``: the build tag is not part of the version we record."""
    import torch

    return str(torch.__version__).split("+")[0]
