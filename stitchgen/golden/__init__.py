"""Golden files: the emitted code for a set of cases, locked on disk.

Two ways to name the cases:

* any project: ``stitchgen golden --cases MODULE[:ATTR] --dir DIR`` —
  ``MODULE`` importable (or a ``.py`` path), ``ATTR`` (default ``CASES``) a
  mapping of case names to functions taking no arguments that return a
  ``GraphModule`` (or an object with ``.gm`` and, optionally, ``.submods``:
  the children to keep opaque); ``--template-dir``/``--variant`` choose the
  templates. The files are ``DIR/<case>.py``, black-formatted.
* this repository's registry (the default): ``tests/golden_cases.py`` under
  the project root, with ``CASES`` (name -> builder taking a device) and
  ``TEMPLATE_SETS`` (set name -> (templates factory, case names)):
  ``golden/<case>.py`` and ``golden/<set>/<case>.py``.

``check`` reports drift as unified diffs, each with the command that
regenerates; ``update`` rewrites the files. ``DIR/VERSIONS`` records the
stitchgen and black versions that produced them and the torch releases
stitchgen supports (the files are byte-identical on each); a mismatch — or
a torch outside that range — is reported as such (regenerate, or install
those versions), not as drift.

``update`` replaces or removes only what it wrote itself. ``DIR/FILES``
records the golden files it wrote; a stale file (one whose case is gone) is
removed only if that record lists it, and a file at a case's path that the
record does not list is replaced only if it already holds exactly the
generated code (it is then recorded), else the whole update is refused,
naming it, before anything is written. ``VERSIONS`` and ``FILES`` are
replaced only when they are stitchgen's own (their first line says so).
Every error about the cases or the directory is a
:class:`~stitchgen.errors.GoldenError`.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..errors import GoldenError
from .cases import (
    Entry,
    entries,
    entries_from_cases,
    find_root,
    load_cases,
    load_registry,
    selected,
)
from .files import RECORD, RECORD_HEADER, VERSIONS, kind, read_versions, stale, state, written
from .version_record import environment, holds, versions

__all__ = [
    "RECORD",
    "REGEN",
    "VERSIONS",
    "Entry",
    "check",
    "entries",
    "entries_from_cases",
    "find_root",
    "load_cases",
    "load_registry",
    "selected",
    "update",
    "versions",
    "written",
]

REGEN = "stitchgen golden --update"


def check(
    root: Path,
    only: list[str] | None = None,
    *,
    all_entries: dict[str, Entry] | None = None,
    directory: Path | None = None,
    regen: str = REGEN,
) -> list[str]:
    """Problems found, each a message (a unified diff for drift); [] if clean.
    ``all_entries``/``directory`` default to the registry under ``root``."""
    all_entries = entries(root) if all_entries is None else all_entries
    directory = root / "golden" if directory is None else directory
    recorded = read_versions(directory)
    if recorded is not None and not holds(recorded):
        return [
            f"{directory / VERSIONS}: version mismatch, not drift: the golden files were made "
            "with\n"
            + _indented(recorded)
            + "and this environment has\n"
            + _indented(environment())
            + f"install those versions to check them, or regenerate: {regen}"
        ]
    problems: list[str] = []
    recorded_files = written(directory)
    for entry in selected(all_entries, only):
        path = entry.path(root)
        actual = entry.code()
        status, expected = state(path, actual, entry.key in recorded_files)
        if status == "missing":
            problems.append(f"{path}: missing (run `{regen} -k {entry.key}`)")
        elif status == "foreign":
            problems.append(
                f"{path}: not a golden file stitchgen wrote ({kind(path)}, not in "
                f"{directory / RECORD}); `{regen}` will not replace it: move it or rename "
                "the case"
            )
        elif status == "drift":
            diff = difflib.unified_diff(
                expected.splitlines(True),
                actual.splitlines(True),
                f"{directory.name}/{entry.key}.py",
                f"generated ({entry.key})",
            )
            problems.append("".join(diff) + f"\nto accept: {regen} -k {entry.key}")
    if not only:
        for path in stale(directory, recorded_files, all_entries):
            problems.append(f"{path}: no case of that name (stale; `{regen}` removes it)")
    return problems


def _indented(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def update(
    root: Path,
    only: list[str] | None = None,
    *,
    all_entries: dict[str, Entry] | None = None,
    directory: Path | None = None,
) -> list[str]:
    """Rewrite golden files; returns the keys whose file changed (a stale
    file removed as ``key (removed)``). Every case is generated and every
    path checked before anything is written: a file stitchgen did not write
    is a :class:`~stitchgen.errors.GoldenError` naming it, and nothing changes."""
    all_entries = entries(root) if all_entries is None else all_entries
    directory = root / "golden" if directory is None else directory
    recorded = written(directory)
    has_versions = read_versions(directory) is not None  # refuses a VERSIONS not ours
    writes: dict[str, tuple[Path, str]] = {}
    refused: list[str] = []
    for entry in selected(all_entries, only):
        path, code = entry.path(root), entry.code()
        status, _ = state(path, code, entry.key in recorded)
        if status == "same":
            recorded.add(entry.key)  # ours by content: exactly what stitchgen writes
        elif status == "foreign":
            refused.append(f"{path} ({kind(path)})")
        else:
            writes[entry.key] = path, code
    if refused:
        raise GoldenError(
            f"not updated: stitchgen did not write {', '.join(refused)} (not in "
            f"{directory / RECORD}) and replaces only its own golden files; move them, rename "
            "those cases, or choose another --dir"
        )
    gone = stale(directory, recorded, all_entries) if not only else []
    changed = []
    for key, (path, code) in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
        recorded.add(key)
        changed.append(key)
    for path in gone:
        key = path.relative_to(directory).with_suffix("").as_posix()
        path.unlink()
        recorded.discard(key)
        changed.append(f"{key} (removed)")
    directory.mkdir(parents=True, exist_ok=True)
    if not only or not has_versions:
        (directory / VERSIONS).write_text(versions())
    present = sorted(key for key in recorded if (directory / f"{key}.py").is_file())
    (directory / RECORD).write_text("\n".join([RECORD_HEADER, *present]) + "\n")
    return changed
