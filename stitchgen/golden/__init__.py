"""Golden files: the emitted code for a set of cases, locked on disk.

Two ways to name the cases:

* ``cases``, ``golden-dir`` and ``templates`` in the project's
  ``[tool.stitchgen]`` (:mod:`stitchgen.project`);
* ``stitchgen golden --cases MODULE[:ATTR] --dir DIR``.

``MODULE`` is importable (or a ``.py`` path), ``ATTR`` (default ``CASES``)
a mapping of case names (``name`` or ``folder/name``) to functions taking no
arguments that return a ``GraphModule``, or an object with ``.gm`` and,
optionally, ``.submods`` (the children to keep opaque) and ``.templates``
(the case's own ``Templates``). The files are ``DIR/<case>.py``,
black-formatted.

``check`` reports drift as unified diffs, each with the command that
regenerates; ``update`` rewrites the files. ``DIR/VERSIONS`` records the
stitchgen and black versions that produced them and the torch releases
stitchgen supports (the files are byte-identical on each); a mismatch — or
a torch outside that range — is reported as such (regenerate, or install
those versions), with the differences it makes shown below it.

``update`` replaces or removes only what it wrote itself, and writes so
that a run stopped at any moment leaves every file whole (``writing.py``). ``DIR/FILES``
records the golden files it wrote; a stale file (one whose case is gone) is
removed only if that record lists it, and a file at a case's path that the
record does not list is replaced only if it already holds exactly the
generated code (it is then recorded), else the whole update is refused,
naming it, before anything is written. ``VERSIONS`` and ``FILES`` are
replaced only when they are stitchgen's own (their first line says so).
Every error about the cases or the directory is a
:class:`~stitchgen.errors.GoldenError`. The pytest plugin
(:mod:`stitchgen.pytest_plugin`) reads and writes the same folders through
:func:`compare`, :func:`write_case` and :func:`finish`.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from ..errors import GoldenError
from .cases import Entry, entries_from_cases, load_cases, selected
from .files import RECORD, VERSIONS, kind, read_versions, stale, state, written
from .version_record import environment, holds, versions
from .writing import apply

__all__ = [
    "RECORD",
    "REGEN",
    "VERSIONS",
    "Entry",
    "check",
    "compare",
    "entries_from_cases",
    "finish",
    "load_cases",
    "selected",
    "update",
    "versions",
    "write_case",
    "written",
]

REGEN = "stitchgen golden --update"


def check(
    all_entries: dict[str, Entry],
    directory: Path,
    only: list[str] | None = None,
    *,
    regen: str = REGEN,
) -> list[str]:
    """Problems found in ``directory``, each a message (a unified diff for
    drift); [] if clean."""
    recorded = read_versions(directory)
    problems: list[str] = []
    if recorded is not None and not holds(recorded):
        problems.append(
            f"{directory / VERSIONS}: version mismatch: the golden files were made with\n"
            + _indented(recorded)
            + "and this environment has\n"
            + _indented(environment())
            + "so a difference below may come from the versions, not from drift: install "
            f"those versions to check them, or regenerate: {regen}"
        )
    recorded_files = written(directory)
    for entry in selected(all_entries, only):
        found = compare(directory, entry.key, entry.code(), recorded_files, f"{regen} -k {entry.key}")
        if found:
            problems.append(found)
    if not only:
        for path in stale(directory, recorded_files, all_entries):
            problems.append(f"{path}: no case of that name (stale; `{regen}` removes it)")
    return problems


def compare(
    directory: Path, key: str, code: str, recorded: set[str], regen: str
) -> str | None:
    """What is wrong with ``directory``'s golden file for ``key`` against
    the generated ``code`` (``recorded``: the keys its record lists), with
    ``regen``, the command that accepts it; None where they match. The one
    judgment the command and the pytest plugin share."""
    path = directory / f"{key}.py"
    status, expected = state(path, code, key in recorded)
    if status == "missing":
        return f"{path}: missing (run `{regen}`)"
    if status == "foreign":
        return (
            f"{path}: not a golden file stitchgen wrote ({kind(path)}, not in "
            f"{directory / RECORD}); `{regen}` will not replace it: move it or rename "
            "the case"
        )
    if status == "drift":
        diff = difflib.unified_diff(
            expected.splitlines(True),
            code.splitlines(True),
            f"{directory.name}/{key}.py",
            f"generated ({key})",
        )
        return "".join(diff) + f"\nto accept: {regen}"
    return None


def _indented(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def update(
    all_entries: dict[str, Entry], directory: Path, only: list[str] | None = None
) -> list[str]:
    """Rewrite golden files; returns the keys whose file changed (a stale
    file removed as ``key (removed)``). Every case is generated and every
    path checked before anything is written: a file stitchgen did not write
    is a :class:`~stitchgen.errors.GoldenError` naming it, and nothing changes."""
    recorded = written(directory)
    has_versions = read_versions(directory) is not None  # refuses a VERSIONS not ours
    writes: dict[str, tuple[Path, str]] = {}
    refused: list[str] = []
    for entry in selected(all_entries, only):
        path, code = entry.path, entry.code()
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
    record = versions() if not only or not has_versions else None
    return apply(directory, writes, gone, recorded, record)


def write_case(directory: Path, key: str, code: str) -> bool:
    """Write ``code`` as ``directory``'s golden file for ``key``, as
    ``update`` writes one (the record first, atomically, never over a file
    stitchgen did not write: a :class:`~stitchgen.errors.GoldenError`
    naming it); was the file changed? ``VERSIONS`` is written where there is
    none. The pytest plugin's ``--stitchgen-update``."""
    recorded = written(directory)
    has_versions = read_versions(directory) is not None
    path = directory / f"{key}.py"
    status, _ = state(path, code, key in recorded)
    if status == "foreign":
        raise GoldenError(
            f"{path} ({kind(path)}) is not a golden file stitchgen wrote (not in "
            f"{directory / RECORD}), and stitchgen replaces only its own: move it or rename the "
            "golden case"
        )
    if status == "same" and key in recorded and has_versions:
        return False
    if status == "same":
        recorded.add(key)  # ours by content: exactly what stitchgen writes
    writes = {} if status == "same" else {key: (path, code)}
    return bool(apply(directory, writes, [], recorded, None if has_versions else versions()))


def finish(directory: Path, produced: set[str], prune: bool) -> tuple[list[Path], list[str]]:
    """After an update run that produced the golden files ``produced``: the
    stale ones (recorded, no longer produced: :func:`stale`, the judgment
    ``check`` makes), and — where ``prune`` (the run was whole and green) —
    those removed, with ``VERSIONS`` rewritten."""
    recorded = written(directory)
    gone = stale(directory, recorded, produced)
    if not prune:
        return gone, []
    return gone, apply(directory, {}, gone, recorded, versions())
