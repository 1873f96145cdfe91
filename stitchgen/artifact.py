"""Artifacts: generated code saved for a compile cache's warm start.

An artifact is a directory:

* ``manifest.json`` — format version, stitchgen/torch/Python versions, the
  entry name, binder, calling convention, submodule names, constant count,
  imports, and the SHA-256 of every other file (plus an HMAC over the
  manifest when saved with a ``key``);
* ``code.py`` — the generated source;
* ``program.json`` — the IR (read by :func:`read_artifact` only);
* ``code.<cache_tag>.bin`` — its compiled code object (``marshal``), used
  when the running Python has the same bytecode magic, else ignored;
* ``consts.json`` and ``consts.pt`` — the lifted constants: each by a
  source form (a verified qualified name, a literal, a slice of literals,
  an ``__fx_repr__`` with verified globals) where it has one, the rest
  (tensors, devices, sizes) ``torch.save``-d and loaded with
  ``weights_only=True`` (see :mod:`stitchgen.portable`). A constant that
  can be stored neither way is refused at save time, naming it.

Loading rebuilds no FX graph: it checks the manifest and digests, unpickles
nothing but the constants (weights-only), reads the others back from their
checked source forms, and runs the stored module — our
template's imports and function definitions. It refuses a truncated,
corrupted, edited or version-mismatched artifact, and a module to import
that is not already imported (unless allowed), before executing anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .archive import Verified, open_artifact, save_artifact, verified_file
from .errors import ArtifactError, BindingError
from .loading import load

if TYPE_CHECKING:
    from .loading import Generated

__all__ = ["load_artifact", "read_artifact", "save_artifact"]


def read_artifact(
    path: str | os.PathLike[str],
    *,
    key: bytes | None = None,
    allow_imports: Iterable[str] = (),
) -> Generated:
    """The :class:`~stitchgen.Generated` stored at ``path``, verified, with
    its IR (``program``).

    ``key``: the HMAC key it was saved with (required if it was signed).
    ``allow_imports``: modules the code may import that are not imported yet
    (importing runs a module's code, so by default only modules already in
    ``sys.modules`` are accepted).
    """
    from . import ir  # the IR: read_artifact's, never load_artifact's

    opened = open_artifact(Path(path), key, allow_imports)
    try:
        program_json = json.loads(verified_file(opened.root, opened.manifest, "program.json"))
        program = ir.from_json(program_json, tuple(opened.consts))
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(f"artifact {path}: the stored program is invalid ({exc})") from None
    return _record(opened, program)


def _record(opened: Verified, program: Any = None) -> Generated:
    """The :class:`~stitchgen.Generated` an opened artifact holds: its code and
    linkage as the manifest records them (the IR if read)."""
    from .conventions import Linkage
    from .loading import Generated

    linkage = Linkage.from_manifest(opened.manifest)
    return Generated(opened.code, linkage, opened.consts, program, code_object=opened.code_object)


def load_artifact(
    path: str | os.PathLike[str],
    submods: Mapping[str, Callable[..., Any]] | None = None,
    *,
    key: bytes | None = None,
    allow_imports: Iterable[str] = (),
) -> Callable[..., Any]:
    """The warm-start path of a compile cache: the callable stored at
    ``path``, bound to ``submods`` (every bound piece must be given). It
    verifies the artifact and runs its module; it reads no IR and builds no
    FX graph.

    >>> import tempfile, torch, torch.fx as fx, stitchgen
    >>> generated = stitchgen.generate(fx.symbolic_trace(lambda x: x * 2))
    >>> path = generated.save(tempfile.mkdtemp() + "/artifact")
    >>> stitchgen.load_artifact(path)(torch.ones(2))
    tensor([2., 2.])
    """
    opened = open_artifact(Path(path), key, allow_imports)
    try:
        return load(_record(opened), submods)
    except BindingError as exc:
        raise BindingError(f"artifact {path}: {exc}") from None
