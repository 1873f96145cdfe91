"""The block catalogue (``stitchgen templates blocks``): for each template
file and each block it renders, the names in scope with their IR types and
the ``emit`` methods that write the shipped text. Generated from the
templates (a walk of Jinja's AST, :mod:`.analysis`) and the IR's
annotations, never typed by hand; ``docs/templates.md`` holds the built-ins'
table, and a test holds it to this."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from jinja2 import nodes

from .analysis import Placement, own_nodes
from .checks import ENTRIES, layouts
from .sources import Library
from .typing_ir import describe

__all__ = ["Entry", "catalogue", "markdown", "text"]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One block of one template file."""

    file: str
    block: str
    scope: tuple[tuple[str, str], ...]  # (name, its types)
    emits: tuple[str, ...]  # the emit methods the shipped definition calls
    definer: str  # the template whose definition renders
    user: bool  # is that definition the user's?


def _emits(placement: Placement) -> tuple[str, ...]:
    if placement.shipped is None:
        return ()
    block = placement.shipped.blocks[placement.name]
    found = sorted(
        (n.lineno, n.attr)
        for n in own_nodes(block)
        if isinstance(n, nodes.Getattr)
        and isinstance(n.node, nodes.Name)
        and n.node.name == "emit"
        and n.attr != "shipped_function"
    )
    return tuple(dict.fromkeys(attr for _, attr in found))


def catalogue(library: Library, variant: str | None) -> list[Entry]:
    """Every block the templates render, file by file, in render order."""
    walks = layouts(library, variant)
    hidden = set(library.env.globals)
    entries = []
    for file in ENTRIES:
        for placement in walks[file].placements.values():
            scope = tuple(
                (name, describe(types))
                for name, types in sorted(placement.scope.items())
                if name not in hidden
            )
            entries.append(
                Entry(
                    file,
                    placement.name,
                    scope,
                    _emits(placement),
                    placement.definer.name,
                    placement.definer.user,
                )
            )
    return entries


def _shipped_text(entry: Entry) -> str:
    return ", ".join(f"emit.{m}()" for m in entry.emits) if entry.emits else "-"


def text(entries: Sequence[Entry]) -> str:
    """The catalogue for a terminal: a section per file, a line per block."""
    out: list[str] = []
    for file in dict.fromkeys(e.file for e in entries):
        out.append(f"{file}")
        rows = [e for e in entries if e.file == file]
        width = max(len(e.block) for e in rows)
        for e in rows:
            scope = ", ".join(f"{n}: {t}" for n, t in e.scope)
            yours = f"  (yours: {e.definer})" if e.user else ""
            out.append(f"  {e.block:<{width}}  {_shipped_text(e)}{yours}")
            out.append(f"  {'':<{width}}  sees {scope}")
        out.append("")
    return "\n".join(out)


def markdown(entries: Sequence[Entry]) -> str:
    """The catalogue as markdown tables, one per file (docs/templates.md)."""
    out: list[str] = []
    for file in dict.fromkeys(e.file for e in entries):
        out += [f"`{file}`:", "", "| block | in scope | shipped text |", "|---|---|---|"]
        for e in entries:
            if e.file == file:
                scope = ", ".join(f"`{n}`: {t}" for n, t in e.scope).replace("|", "\\|")
                emits = ", ".join(f"`emit.{m}()`" for m in e.emits) or "(empty)"
                out.append(f"| `{e.block}` | {scope} | {emits} |")
        out.append("")
    return "\n".join(out)
