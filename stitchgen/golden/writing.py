"""Writing a golden directory so that a run stopped at any moment — a full
disk, SIGKILL, Ctrl-C — leaves every file whole and the next plain run
finishes unaided.

* Each file (golden files, ``VERSIONS``, ``FILES``) is written to a
  temporary file beside it (``.<name>.<random>.stitchgen-tmp``), flushed and
  fsynced, then renamed over it with ``os.replace``: the old text or the new
  one, never half of either.
* The record goes first: ``FILES`` is written listing the keys about to be
  written before any of them appears, so a file stitchgen wrote is always
  one it recorded (a killed run's new file is not mistaken for the user's).
* A killed run's temporary files are recognisably stitchgen's (that name);
  the next run removes them, and nothing else.
* An ``OSError`` is a :class:`~stitchgen.errors.GoldenError` naming the file
  and saying what is intact: ``golden/case_02.py: No space left on device
  (no golden file was changed)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from .. import atomic
from ..errors import GoldenError
from .files import RECORD, RECORD_HEADER, VERSIONS

__all__ = ["TEMPORARY_SUFFIX", "apply", "leftovers", "write_atomic"]

#: what ends the name of every temporary file stitchgen writes in a golden directory
TEMPORARY_SUFFIX = ".stitchgen-tmp"


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path``, whole or not at all (temporary file, fsync, rename)."""
    atomic.write_atomic(path, text, suffix=TEMPORARY_SUFFIX)


def leftovers(directory: Path) -> list[Path]:
    """The temporary files a stopped run left in ``directory`` (stitchgen's
    by name: a leading dot and :data:`TEMPORARY_SUFFIX`; plain files only)."""
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.rglob(f".*{TEMPORARY_SUFFIX}")
        if p.is_file() and not p.is_symlink()
    )


def apply(
    directory: Path,
    writes: Mapping[str, tuple[Path, str]],
    removals: Iterable[Path],
    recorded: set[str],
    versions: str | None,
) -> list[str]:
    """Write ``writes`` (key -> (path, code)), remove ``removals`` (golden
    files the record lists), then ``VERSIONS`` (where ``versions`` is given)
    and the final record; the keys changed (``key (removed)`` for a removal).
    ``recorded`` is the record as read, updated in place."""
    changed: list[str] = []
    current = directory / RECORD
    try:
        for leftover in leftovers(directory):
            leftover.unlink()
        directory.mkdir(parents=True, exist_ok=True)
        if not set(writes) <= recorded:  # the record lists a file before it can appear
            recorded.update(writes)
            write_atomic(current, _record(recorded, directory))
        for key, (path, code) in writes.items():
            current = path
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, code)
            changed.append(key)
        for path in removals:
            current = path
            key = path.relative_to(directory).with_suffix("").as_posix()
            path.unlink()
            _prune(path.parent, directory)
            recorded.discard(key)
            changed.append(f"{key} (removed)")
        if versions is not None:
            current = directory / VERSIONS
            write_atomic(current, versions)
        current = directory / RECORD
        write_atomic(current, _record(recorded, directory, present_only=True))
    except OSError as exc:
        raise GoldenError(f"{current}: {exc.strerror or exc} ({_intact(changed)})") from exc
    return changed


def _prune(folder: Path, directory: Path) -> None:
    """Remove the folders a removal emptied, up to ``directory`` (kept)."""
    while folder != directory and directory in folder.parents and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _record(keys: set[str], directory: Path, present_only: bool = False) -> str:
    if present_only:
        keys = {k for k in keys if (directory / f"{k}.py").is_file()}
    return "\n".join([RECORD_HEADER, *sorted(keys)]) + "\n"


def _intact(changed: list[str]) -> str:
    if not changed:
        return "no golden file was changed"
    return (
        f"changed before it: {', '.join(changed)}; every other golden file is as it was, and "
        "each file is whole"
    )
