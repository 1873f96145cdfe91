"""Artifacts on disk, generated code saved for a compile cache's warm start:
writing one, and reading one back verified (digests, versions, signature,
imports); :func:`stitchgen.loading.read_artifact` turns what this reads into
a ``Generated``, :func:`~stitchgen.loading.load_artifact` into a callable.

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
that is not already imported (unless allowed; :mod:`stitchgen.runtime`,
which lowered control flow calls, always is), before executing anything.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import io
import json
import marshal
import os
import shutil
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from .errors import ArtifactError, a_or_an
from .portable import check_forms, missing_modules, read_consts, write_consts
from .torch_versions import torch_version
from .version import __version__

#: the module generated code imports of stitchgen's (:mod:`stitchgen.runtime`):
#: an artifact may import it, as it may import torch
RUNTIME = "stitchgen.runtime"

if TYPE_CHECKING:
    from .conventions import Linkage
    from .ir import Program

__all__ = [
    "FORMAT",
    "VERSION",
    "Verified",
    "check_replaceable",
    "digest",
    "open_artifact",
    "read_manifest",
    "save_artifact",
    "verified_file",
    "versions",
]

FORMAT = "stitchgen-artifact"
VERSION = 2  # 2: constants by source form (consts.json)


def digest(data: bytes) -> str:
    """The SHA-256 an artifact records for a file."""
    return hashlib.sha256(data).hexdigest()


def _marshal_name() -> str:
    return f"code.{sys.implementation.cache_tag}.bin"


def versions() -> dict[str, str]:
    """The versions an artifact records (and must match to load)."""
    return {
        "stitchgen": __version__,
        "torch": torch_version(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


def _consts_files(consts: list[Any], program: Program) -> tuple[bytes, bytes]:
    """``consts.pt`` and ``consts.json`` (see :mod:`stitchgen.portable`)."""
    labels = [f"{d.name} ({d.description})" for d in program.consts]
    stored, forms = write_consts(consts, labels)
    return stored, json.dumps(forms, sort_keys=True).encode("utf-8")


def _sign(manifest: dict[str, Any], key: bytes) -> str:
    body = json.dumps({k: v for k, v in manifest.items() if k != "hmac"}, sort_keys=True)
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def save_artifact(
    path: str | os.PathLike[str],
    *,
    code: str,
    compiled: types.CodeType,
    linkage: Linkage,
    consts: list[Any],
    program: Program | None,
    templates: Any,
    key: bytes | None = None,
) -> Path:
    """Write a ``Generated``'s parts (``compiled``: its code object;
    ``templates``: the :class:`stitchgen.Templates` that rendered it) to the
    directory ``path``, replacing it atomically only where it is absent, an
    empty directory or a stitchgen artifact holding nothing but its own
    files; anything else there is an :class:`~stitchgen.errors.ArtifactError`
    naming it, and nothing is written."""
    if program is None:
        raise ArtifactError("an artifact stores the program's IR; this code carries none")
    from .ir import CLASSES, iter_statements, to_json  # written here, never read warm

    for fn in program.functions:
        for stmt in iter_statements(fn.body):
            if CLASSES.get(type(stmt).__name__) is not type(stmt):
                raise ArtifactError(
                    f"the program holds {a_or_an(type(stmt).__qualname__)} statement in function "
                    f"{fn.name!r}, a kind of yours: an artifact holds the IR's own kinds "
                    "only (read_artifact could not rebuild it)"
                )
    if templates is not None and (
        templates.dirs or templates.filters or templates.globals or templates.kinds
    ):
        raise ArtifactError(
            "artifacts hold code from stitchgen's own templates (built-in or a shipped "
            f"variant); this code was rendered with {templates!r}"
        )
    stored, forms = _consts_files(consts, program)

    files = {
        "code.py": code.encode("utf-8"),
        "consts.pt": stored,
        "consts.json": forms,
        "program.json": json.dumps(to_json(program)).encode("utf-8"),
        _marshal_name(): marshal.dumps(compiled),
    }
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "versions": versions(),
        "magic": importlib.util.MAGIC_NUMBER.hex(),
        **linkage.manifest(),
        "variant": templates.variant if templates is not None else None,
        "const_count": len(consts),
        "imports": list(program.imports),
        "digests": {name: digest(data) for name, data in files.items()},
    }
    if key is not None:
        manifest["hmac"] = _sign(manifest, key)
    target = Path(path)
    check_replaceable(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:  # a file where a folder is wanted, a folder not writable
        above = error.filename or target.parent
        raise ArtifactError(
            f"cannot save an artifact at {str(target)!r}: its folder {str(above)!r} cannot be "
            f"made ({error.strerror or error})"
        ) from None
    from .atomic import staging_dir  # saving only: load_artifact does not import it

    staging = staging_dir(target, ".stitchgen-staging")  # mkdir's mode, or the old one's
    aside = None
    try:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if target.exists():  # the old artifact moves aside; back in place if the swap fails
            aside = staging.with_name(staging.name + "-old")
            os.replace(target, aside)
        try:
            os.replace(staging, target)
        except BaseException:
            if aside is not None:
                os.replace(aside, target)
                aside = None
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    return target


def check_replaceable(target: Path) -> None:
    """Nothing, if ``save`` may replace ``target``: absent, an empty directory,
    or an artifact of stitchgen's holding only the files its manifest lists."""
    if not os.path.lexists(target):
        return
    refusal = "save replaces only an empty directory or a stitchgen artifact"
    if target.is_symlink() or not target.is_dir():
        kind = "a symbolic link" if target.is_symlink() else "a file"
        raise ArtifactError(f"{target} is {kind}, not an artifact directory: {refusal}")
    found = sorted(entry.name for entry in target.iterdir())
    if not found:
        return
    try:
        manifest = read_manifest(target)
    except ArtifactError:
        raise ArtifactError(
            f"{target} is not a stitchgen artifact (it holds {_listed(found)}): {refusal}; "
            "choose another path"
        ) from None
    own = {"manifest.json", *manifest.get("digests", {})}
    other = [
        name
        for name in found
        if name not in own or not (target / name).is_file() or (target / name).is_symlink()
    ]
    if other:
        raise ArtifactError(
            f"{target} is a stitchgen artifact that also holds {_listed(other)}, which "
            f"stitchgen did not write: {refusal}; move them first"
        )


def _listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def read_manifest(root: Path) -> dict[str, Any]:
    """``root/manifest.json`` if it says ``root`` is a stitchgen artifact;
    else an :class:`~stitchgen.errors.ArtifactError` saying why not."""
    if not (root / "manifest.json").is_file():
        raise ArtifactError(f"{root}: not a stitchgen artifact (no manifest.json)")
    try:
        manifest = json.loads(_read(root, "manifest.json"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ArtifactError(f"artifact {root}: manifest.json is corrupt ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"{root}: not a stitchgen artifact (manifest.json is not stitchgen's)")
    return manifest


def _read(path: Path, name: str) -> bytes:
    try:
        return (path / name).read_bytes()
    except OSError as exc:
        reason = exc.strerror or exc
        raise ArtifactError(f"artifact {path}: cannot read {name} ({reason})") from None


@dataclass
class Verified:
    """An artifact's parts, checked: what the warm start needs."""

    root: Path
    manifest: dict[str, Any]
    code: str
    consts: list[Any]
    code_object: types.CodeType | None


def verified_file(root: Path, manifest: dict[str, Any], name: str) -> bytes:
    data = _read(root, name)
    if manifest.get("digests", {}).get(name) != digest(data):
        raise ArtifactError(f"artifact {root}: {name} does not match its digest (corrupt, edited)")
    return data


def open_artifact(root: Path, key: bytes | None, allow_imports: Iterable[str]) -> Verified:
    manifest = read_manifest(root)
    if manifest.get("version") != VERSION:
        raise ArtifactError(
            f"artifact {root}: format version {manifest.get('version')!r}, this stitchgen "
            f"reads version {VERSION}; regenerate it"
        )
    if "hmac" in manifest or key is not None:
        if key is None:
            raise ArtifactError(f"artifact {root} is signed: pass its key")
        if not hmac.compare_digest(str(manifest.get("hmac", "")), _sign(manifest, key)):
            raise ArtifactError(f"artifact {root}: signature mismatch (tampered, or another key)")
    mine = versions()
    if manifest.get("versions") != mine:
        raise ArtifactError(
            f"artifact {root} was made by {manifest.get('versions')}, this process runs "
            f"{mine}; regenerate it"
        )
    code = verified_file(root, manifest, "code.py").decode("utf-8")
    consts_data = verified_file(root, manifest, "consts.pt")
    try:
        forms = check_forms(
            json.loads(verified_file(root, manifest, "consts.json")), manifest.get("const_count")
        )
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"artifact {root}: consts.json is corrupt ({exc})") from None
    except ArtifactError as exc:
        raise ArtifactError(f"artifact {root}: {exc}") from None
    allowed = {*allow_imports, RUNTIME}  # (ours: what lowered control flow calls, torch alone)
    missing = [m for m in manifest.get("imports", []) if m not in sys.modules and m not in allowed]
    missing += [m for m in missing_modules(forms, allowed) if m not in missing]
    if missing:
        raise ArtifactError(
            f"artifact {root} imports {missing}, not imported in this process; import them "
            "first or pass allow_imports"
        )
    try:
        stored = torch.load(io.BytesIO(consts_data), weights_only=True)
    except Exception as exc:
        raise ArtifactError(f"artifact {root}: consts.pt cannot be loaded safely ({exc})") from None
    if not isinstance(stored, list) or len(stored) != manifest.get("const_count"):
        raise ArtifactError(f"artifact {root}: consts.pt does not hold the program's constants")
    try:
        consts = read_consts(stored, forms)
    except ArtifactError as exc:
        raise ArtifactError(f"artifact {root}: {exc}") from None
    code_object = None
    marshalled = _marshal_name()
    if manifest.get("magic") == importlib.util.MAGIC_NUMBER.hex() and (root / marshalled).exists():
        code_object = marshal.loads(verified_file(root, manifest, marshalled))
        if not isinstance(code_object, types.CodeType):
            raise ArtifactError(f"artifact {root}: {marshalled} is not a code object")
    return Verified(root, manifest, code, consts, code_object)
