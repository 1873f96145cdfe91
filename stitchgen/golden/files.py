"""The files in a golden directory, and which of them stitchgen wrote:
``FILES`` records the golden files ``update`` wrote; ``VERSIONS`` and
``FILES`` are stitchgen's when their first line says so. Nothing here
writes; it tells ``check`` and ``update`` what they may replace."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import GoldenError

__all__ = [
    "RECORD",
    "RECORD_HEADER",
    "VERSIONS",
    "is_key",
    "kind",
    "read_versions",
    "stale",
    "state",
    "written",
]

VERSIONS = "VERSIONS"
#: the record of the golden files ``update`` wrote into a directory
RECORD = "FILES"
#: its first line
RECORD_HEADER = (
    "# stitchgen golden: the files `stitchgen golden --update` wrote here "
    "(it replaces or removes no other file)"
)


def _owned_text(path: Path, ours: Callable[[str], bool], what: str) -> str | None:
    """The text of stitchgen's own file ``path``, None if there is none; a
    GoldenError if something else is there."""
    if not os.path.lexists(path):
        return None
    text = None
    if path.is_file() and not path.is_symlink():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
    if text is None or not ours(text):
        raise GoldenError(
            f"{path} is not {what} that stitchgen wrote ({kind(path)}); stitchgen replaces "
            "only its own files there: move it, or choose another --dir"
        )
    return text


def kind(path: Path) -> str:
    if path.is_symlink():
        return "a symbolic link"
    if path.is_dir():
        return "a directory"
    return "a file of other content"


def written(directory: Path) -> set[str]:
    """The golden files stitchgen recorded writing into ``directory`` (their
    keys: ``case`` or ``set/case``); empty where it keeps no record yet."""
    text = _owned_text(directory / RECORD, lambda t: t.startswith(RECORD_HEADER), "a record")
    lines = (text or "").splitlines()[1:]
    return {key for key in (line.strip() for line in lines) if is_key(key)}


def is_key(key: str) -> bool:
    """A relative path inside the directory, as ``update`` writes them."""
    parts = key.split("/")
    return bool(key) and all(p and not p.startswith(".") and "\\" not in p for p in parts)


def read_versions(directory: Path) -> str | None:
    return _owned_text(
        directory / VERSIONS, lambda t: t.startswith("stitchgen=="), "a VERSIONS record"
    )


def state(path: Path, code: str, recorded: bool) -> tuple[str, str]:
    """How the file at a case's ``path`` stands against its ``code``, and its
    text: ``missing``, ``same``, ``drift`` (stitchgen's own file, which
    ``update`` replaces: ``recorded`` in its record) or ``foreign`` (anything
    else there, which ``update`` refuses to replace)."""
    if not os.path.lexists(path):
        return "missing", ""
    if not path.is_file() or path.is_symlink():
        return "foreign", ""
    text = path.read_text(encoding="utf-8", errors="replace")
    if text == code:
        return "same", text
    return ("drift" if recorded else "foreign"), text


def stale(directory: Path, recorded: set[str], cases: Iterable[str]) -> list[Path]:
    """The golden files stitchgen wrote whose case is gone (still there)."""
    paths = (directory / f"{key}.py" for key in sorted(recorded - set(cases)))
    return [p for p in paths if p.is_file() and not p.is_symlink()]
