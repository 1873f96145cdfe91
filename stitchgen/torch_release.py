"""torch's release as everything stitchgen writes records it (artifacts,
dumps, golden ``VERSIONS``): apart from :mod:`stitchgen.version`, which the
template cache reads and which therefore imports no torch."""

from __future__ import annotations

__all__ = ["torch_version"]


def torch_version() -> str:
    """``2.13.0`` for ``2.13.0+cpu``: the build tag is not part of it."""
    import torch

    return str(torch.__version__).split("+")[0]
