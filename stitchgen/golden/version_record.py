"""``VERSIONS``: what a golden directory records of the versions that made
it, and whether this environment meets that record (version specifiers
read by ``packaging``, PEP 440's own implementation)."""

from __future__ import annotations

__all__ = ["environment", "holds", "pinned", "versions"]


def versions() -> str:
    """What ``VERSIONS`` records: the stitchgen and black versions, and the
    torch releases stitchgen declares (its ``torch`` requirement: the golden
    files are byte-identical on every one, which its CI matrix proves)."""
    return "\n".join([*pinned(), _torch_requirement()]) + "\n"


def pinned() -> list[str]:
    """The lines ``VERSIONS`` holds to exactly: stitchgen's and black's."""
    import black

    from ..version import __version__

    return [f"stitchgen=={__version__}", f"black=={black.__version__}"]


def _torch_requirement() -> str:
    """``torch<2.16,>=2.11``: the requirement in stitchgen's own metadata;
    run from a source tree never installed, the running torch exactly."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement

    try:
        declared = requires("stitchgen") or []
    except PackageNotFoundError:
        declared = []
    for text in declared:
        requirement = Requirement(text)
        if requirement.name == "torch" and requirement.marker is None:
            return f"torch{requirement.specifier}"
    return f"torch=={_running_torch()}"


def holds(recorded: str) -> bool:
    """Does this environment meet the ``VERSIONS`` that were recorded? Each
    line as :func:`versions` writes it now, except the torch requirement
    (``torch<2.16,>=2.11``), which the running torch must satisfy
    (``torch==2.13.0``, as older files record it, exactly; a local label
    such as ``+cpu`` aside)."""
    from packaging.requirements import InvalidRequirement, Requirement

    lines = recorded.splitlines()
    if [line for line in lines if not line.startswith("torch")] != pinned():
        return False
    torch_lines = [line for line in lines if line.startswith("torch")]
    if len(torch_lines) != 1:
        return False
    try:
        requirement = Requirement(torch_lines[0])
    except InvalidRequirement:
        return False
    if requirement.name != "torch" or not requirement.specifier:
        return False
    return requirement.specifier.contains(_running_torch(), prereleases=True)


def environment() -> str:
    """The versions this environment has, each exactly."""
    return "\n".join([*pinned(), f"torch=={_running_torch()}"]) + "\n"


def _running_torch() -> str:
    from ..torch_versions import torch_version

    return torch_version()
