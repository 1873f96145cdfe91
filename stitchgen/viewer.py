"""``stitchgen show ARTIFACT``: what an artifact holds, read without running
anything — its code (black-formatted on request), its bindings (submodule
names, constant descriptions and the source forms they are read back by),
its versions against this process's, and
whether every file matches the digest the manifest records. Nothing is
unpickled (the constants' descriptions come from the stored IR, which is
JSON), imported or executed."""

from __future__ import annotations

import json
import pprint
from pathlib import Path
from typing import Any

from . import ir
from .archive import digest, read_manifest, versions
from .portable import check_forms, source_of

__all__ = ["describe_artifact"]


def _files(root: Path, manifest: dict[str, Any]) -> tuple[list[str], bool]:
    lines, ok = [], True
    for name, recorded in sorted(manifest.get("digests", {}).items()):
        try:
            actual = digest((root / name).read_bytes())
        except OSError as exc:
            lines.append(f"  {name}: FAILED (cannot read: {exc.strerror or exc})")
            ok = False
            continue
        if actual == recorded:
            lines.append(f"  {name}: ok")
        else:
            lines.append(f"  {name}: FAILED (does not match its digest: corrupt or edited)")
            ok = False
    return lines, ok


def describe_artifact(
    path: str | Path, *, format: bool = False, show_ir: bool = False
) -> tuple[str, bool]:
    """The report for the artifact at ``path``, and whether its digests
    verify (a signature is reported, not checked: that needs the key). A
    path that is not an artifact is an :class:`~stitchgen.errors.ArtifactError`."""
    root = Path(path)
    manifest = read_manifest(root)
    files, ok = _files(root, manifest)
    out = [f"artifact {root}", f"entry: {manifest.get('name')} ({manifest.get('convention')})"]
    if manifest.get("variant"):
        out.append(f"templates: the {manifest['variant']} variant")
    mine = versions()
    theirs = manifest.get("versions", {})
    same = (
        "same as this process" if theirs == mine else f"this process has {mine}: it will not load"
    )
    out.append(f"versions: {theirs} ({same})")
    out.append("signature: " + ("HMAC-SHA256 (not checked here)" if "hmac" in manifest else "none"))
    out.append("digests: " + ("all files verify" if ok else "VERIFICATION FAILED"))
    out.extend(files)
    inlined = set(manifest.get("inlined_submods", ()))
    out.append("submodule bindings:")
    for name in manifest.get("submod_names", []):
        out.append(f"  {name}" + (" (inlined: no binding needed)" if name in inlined else ""))
    if not manifest.get("submod_names"):
        out.append("  none")
    program = _program(root, manifest)
    forms = _forms(root, manifest)
    out.append("constants:")
    if isinstance(program, ir.Program):
        for i, decl in enumerate(program.consts):
            form = forms[i] if i < len(forms) else None
            stored = f"read back as {source_of(form)}" if form else "in consts.pt"
            out.append(f"  {decl.name}: {decl.description} ({stored})")
        if not program.consts:
            out.append("  none")
    else:
        out.append(f"  {manifest.get('const_count')} (descriptions unreadable: {program})")
    if isinstance(program, ir.Program):
        out.extend(_exported(program))
    if manifest.get("imports"):
        out.append(f"imports: {', '.join(manifest['imports'])}")
    try:
        code = (root / "code.py").read_text(encoding="utf-8")
    except OSError as exc:
        code = f"# cannot read code.py: {exc}\n"
    if format:
        from .formatting import format_source

        try:
            code = format_source(code)
        except Exception as exc:  # black refuses it: show it as it is
            out.append(f"(black could not format the code: {exc})")
    out.append("code:")
    out.append(code.rstrip("\n"))
    if show_ir:
        out.append("IR:")
        out.append(pprint.pformat(program, width=100) if isinstance(program, ir.Program) else "")
    return "\n".join(out) + "\n", ok


def _exported(program: ir.Program) -> list[str]:
    """An exported program's inputs (as its entry takes them: the call of
    :data:`~stitchgen.ir.INPUTS` that opens it, and the names it gives
    them) and its checks (each :class:`~stitchgen.ir.Check`'s message);
    nothing for any other program."""
    body = program.entry.body
    first = body[0] if body else None
    callee = getattr(first, "callee", None)
    if not isinstance(first, ir.Call) or not isinstance(callee, (ir.TargetRef, ir.GlobalRef)):
        return []
    if isinstance(callee, ir.TargetRef):
        callee = program.targets[callee.index].ref if callee.index < len(program.targets) else None
    if callee != ir.INPUTS or len(first.args) != 6:
        return []
    count, keywords = first.args[3], first.args[4]
    flat = [
        s.target for s in body[1:] if isinstance(s, ir.GetItem) and s.obj == ir.Name(first.target)
    ]
    names = [getattr(k, "value", "?") for k in getattr(keywords, "items", ())]
    out = [
        f"inputs (an exported program's, checked as ep.module() checks them): "
        f"{getattr(count, 'value', '?')} positional, keywords {names}; flat: {', '.join(flat)}",
        "checks:",
    ]
    checks = [s for s in ir.iter_statements(program.entry.statements) if isinstance(s, ir.Check)]
    out.extend(f"  {check.error}: {check.message}" for check in checks)
    if not checks:
        out.append("  none")
    return out


def _forms(root: Path, manifest: dict[str, Any]) -> list[Any]:
    """The constants' source forms (``consts.json``), [] where unreadable."""
    try:
        data = json.loads((root / "consts.json").read_text(encoding="utf-8"))
        return check_forms(data, manifest.get("const_count"))
    except Exception:
        return []


def _program(root: Path, manifest: dict[str, Any]) -> ir.Program | str:
    try:
        data = json.loads((root / "program.json").read_text(encoding="utf-8"))
        count = int(manifest.get("const_count", 0))
        program = ir.from_json(data, (None,) * count)  # placeholders: nothing is unpickled
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return program if isinstance(program, ir.Program) else "not a program"
