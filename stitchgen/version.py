"""stitchgen's version (one place: the package, artifacts, golden headers
and the template cache read it). torch's, as everything we write records
it, is :func:`stitchgen.torch_versions.torch_version`."""

__version__ = "0.1.0"
