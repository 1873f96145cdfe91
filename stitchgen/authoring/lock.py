"""The lock of a template directory: the shipped text of every block its
templates override, and what that block emits, so an upgrade of stitchgen
that changes either is named.

``stitchgen templates lock DIR`` writes ``DIR/stitchgen.lock``: a first line
that says it is stitchgen's, then JSON — for each overridden block, the
file that overrides it, the shipped template it overrides (the nearest
shipped definition: the variant's where a variant defines it), that
block's Jinja text, and what it writes on each specimen graph
(:mod:`stitchgen.authoring.specimens`), rendered through Jinja with the
shipped templates: the lines the emitter writes through ``emit``, which the
Jinja text does not show. It replaces only its own file (a
``stitchgen.lock`` whose first line is not ours is refused), written
atomically. ``stitchgen templates check DIR`` and every render with those
templates compare the locked text and output with today's: a block whose
base changed either way is *stale*. Without a lock nothing is said: the
lock is opt-in.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import jinja2
from jinja2 import nodes

from ..atomic import write_atomic
from ..errors import StaleTemplateWarning, TemplateError
from ..version import __version__
from .report import LOCK
from .sources import Library, Source, shipped_definer

__all__ = ["LOCK", "LOCK_HEADER", "Stale", "block_texts", "locked_blocks", "stale", "warn_stale",
           "write_lock"]  # fmt: skip

LOCK_HEADER = (
    "# stitchgen templates lock: the shipped text of the blocks overridden here "
    "(written by `stitchgen templates lock`, read by `stitchgen templates check`)"
)

#: (directory, stale blocks) already warned of in this process
_warned: set[tuple[str, tuple[str, ...]]] = set()
_warned_lock = threading.Lock()


def block_texts(env: jinja2.Environment, text: str) -> dict[str, str]:
    """Each block of the template ``text``, as the whole lines from its
    ``{% block %}`` to its ``{% endblock %}`` (Jinja's own lexer finds them)."""
    lines = text.splitlines(keepends=True)
    found: dict[str, str] = {}
    stack: list[tuple[str, int]] = []
    tokens = [t for t in env.lex(text) if t[1] != "whitespace"]
    for i, (lineno, kind, _) in enumerate(tokens):
        if kind != "block_begin" or i + 1 >= len(tokens):
            continue
        keyword = tokens[i + 1][2]
        if keyword == "block" and i + 2 < len(tokens):
            stack.append((tokens[i + 2][2], lineno))
        elif keyword == "endblock" and stack:
            name, start = stack.pop()
            found.setdefault(name, "".join(lines[start - 1 : lineno]))
    return found


@dataclasses.dataclass(frozen=True)
class Locked:
    """One overridden block: the file of the user's, the block, the
    shipped template it overrides, that block's text then, and what it
    wrote on each specimen then (None in a lock from before it was recorded)."""

    file: str
    block: str
    base: str
    text: str
    emitted: dict[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class Stale:
    """A locked block whose shipped text, or what it emits, is not what it was."""

    directory: str
    locked: Locked
    now: str | None  # None: the shipped template has no such block any more
    emitted: dict[str, str] | None = None  # what it writes on the specimens now
    calls_super: bool = False  # the override renders the base through super()

    def describe(self) -> str:
        """``DIR/function.py.j2: block 'x' overrides stitchgen/function.py.j2's, which ...``"""
        where = os.path.join(self.directory, self.locked.file)
        if self.now is None:
            what = "which is gone"
        elif self.now != self.locked.text:
            what = "which changed"
        else:
            what = "whose output on the specimen graphs changed (the emitter's text)"
        yours = (
            "your block calls super(), so it now writes the new text"
            if self.calls_super
            else "your block replaces it, so it keeps the old text"
        )
        return (
            f"{where}: block {self.locked.block!r} overrides {self.locked.base}'s, {what} since "
            f"`stitchgen templates lock`; {yours} (the override may need updating; lock again "
            "once it does)"
        )

    def diff(self) -> str:
        """The base block, locked against today's: its text where that
        changed, and what it writes on the specimens where that changed (a
        unified diff each)."""
        base, out = self.locked.base, list[str]()
        if self.now != self.locked.text:
            out += difflib.unified_diff(
                self.locked.text.splitlines(True),
                (self.now or "").splitlines(True),
                f"{base} (locked)",
                f"{base} (now)",
            )
        if self.now is not None and self.emitted != self.locked.emitted:
            out += difflib.unified_diff(
                _shown(self.locked.emitted).splitlines(True),
                _shown(self.emitted).splitlines(True),
                f"{base} block {self.locked.block!r} on the specimens (locked)",
                f"{base} block {self.locked.block!r} on the specimens (now)",
            )
        return "".join(out)


def _shown(emitted: dict[str, str] | None) -> str:
    """What a block wrote, specimen by specimen."""
    parts = []
    for specimen, text in sorted((emitted or {}).items()):
        parts.append(f"# specimen {specimen}\n{text}" + ("" if text.endswith("\n") else "\n"))
    return "".join(parts)


#: what the shipped blocks write on the specimens: ``(template, block)`` pairs
#: -> each pair's text per specimen (:func:`stitchgen.authoring.specimens.emitted`,
#: which the command line passes in: it lowers graphs, and this module is
#: also read while rendering, which never does)
Outputs = Callable[[Iterable[tuple[str, str]]], dict[tuple[str, str], dict[str, str]]]


def _overrides(library: Library, directory: str, outputs: Outputs) -> list[Locked]:
    """The blocks the templates in ``directory`` override, with the text of
    each block's nearest shipped definition and what it writes on the specimens."""
    root = os.path.realpath(directory)
    found = []
    for path in sorted(Path(directory).rglob("*.j2")):
        name = path.relative_to(directory).as_posix()
        source = _loaded(library, name, root)
        if source is None or source.extends is None:
            continue
        try:
            parents = library.chain(source.extends)
        except jinja2.TemplateError:
            continue
        for block in source.top:
            base = shipped_definer(parents, block.name)
            if base is not None:
                text = block_texts(library.env, base.text).get(block.name, "")
                found.append(Locked(name, block.name, base.name, text))
    written = outputs([(b.base, b.block) for b in found])
    return [dataclasses.replace(b, emitted=written.get((b.base, b.block))) for b in found]


def _loaded(library: Library, name: str, root: str) -> Source | None:
    """``name`` as the library loads it, where that is the file under ``root``."""
    try:
        source = library.load(name)
    except jinja2.TemplateError:
        return None
    return source if os.path.realpath(source.filename).startswith(root + os.sep) else None


def write_lock(library: Library, directory: str, outputs: Outputs) -> list[Locked]:
    """Write ``directory/stitchgen.lock``; the blocks it records. A
    ``stitchgen.lock`` that is not stitchgen's is a TemplateError, and
    nothing is written."""
    path = Path(directory) / LOCK
    _read(path)  # refuses a file that is not ours
    blocks = _overrides(library, directory, outputs)
    body = {
        "stitchgen": __version__,
        "blocks": [dataclasses.asdict(b) for b in blocks],
    }
    text = LOCK_HEADER + "\n" + json.dumps(body, indent=1, sort_keys=True) + "\n"
    write_atomic(path, text)
    return blocks


def _read(path: Path) -> list[Locked] | None:
    """The blocks a lock records; None where there is no lock."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise TemplateError(f"{path}: not a lock stitchgen wrote (not a plain file)", str(path))
    text = path.read_text(encoding="utf-8", errors="replace")
    first, _, rest = text.partition("\n")
    if first != LOCK_HEADER:
        raise TemplateError(
            f"{path}: not a lock stitchgen wrote (its first line is not stitchgen's); "
            "move it to lock this directory",
            str(path),
        )
    try:
        body = json.loads(rest)
        return [Locked(**entry) for entry in body["blocks"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise TemplateError(f"{path}: a damaged lock ({exc}); lock again", str(path)) from exc


def locked_blocks(directory: str) -> list[Locked] | None:
    """The blocks ``directory``'s lock records (None: no lock)."""
    return _read(Path(directory) / LOCK)


def stale(library: Library, dirs: Sequence[str], outputs: Outputs | None = None) -> list[Stale]:
    """The locked blocks of ``dirs`` whose shipped text changed, or (given
    ``outputs``) what they write on the specimens."""
    entries = [(d, entry) for d in dirs for entry in locked_blocks(d) or ()]
    recorded = [(e.base, e.block) for _, e in entries if e.emitted is not None]
    written = outputs(recorded) if outputs is not None and recorded else {}
    found = []
    for directory, entry in entries:
        try:
            base = library.load(entry.base)
        except jinja2.TemplateError:
            found.append(Stale(directory, entry, None))
            continue
        now = block_texts(library.env, base.text).get(entry.block)
        out = written.get((entry.base, entry.block), entry.emitted)
        if now != entry.text or out != entry.emitted:
            found.append(Stale(directory, entry, now, out, _calls_super(library, directory, entry)))
    return found


def _calls_super(library: Library, directory: str, entry: Locked) -> bool:
    """Does the override of ``entry`` in ``directory`` render its base (``super()``)?"""
    source = _loaded(library, entry.file, os.path.realpath(directory))
    block = source.blocks.get(entry.block) if source is not None else None
    return block is not None and any(
        isinstance(call.node, nodes.Name) and call.node.name == "super"
        for call in block.find_all(nodes.Call)
    )


def warn_stale(found: Sequence[Stale]) -> None:
    """One :class:`~stitchgen.errors.StaleTemplateWarning` per directory
    and set of stale blocks, per process."""
    by_dir: dict[str, list[Stale]] = {}
    for item in found:
        by_dir.setdefault(item.directory, []).append(item)
    for directory, items in by_dir.items():
        names = tuple(f"{s.locked.file} {s.locked.block} ({s.locked.base})" for s in items)
        key = (os.path.realpath(directory), names)
        with _warned_lock:
            if key in _warned:
                continue
            _warned.add(key)
        warnings.warn(
            f"templates in {directory} override blocks whose shipped text changed since they "
            f"were locked: {'; '.join(names)}; run `stitchgen templates check {directory}`",
            StaleTemplateWarning,
            stacklevel=_callers_level(),
        )


def _callers_level() -> int:
    """The ``stacklevel`` that attributes a warning to the first frame
    outside stitchgen (the caller of ``generate``, ``compile``, ``render``)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("stitchgen."):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level
