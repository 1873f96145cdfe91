"""``stitchgen templates diff``: what templates of yours change in the
generated code, case by case — a golden case rendered with the shipped
templates and with yours, as a unified diff."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from typing import Any

from ..golden import Entry

__all__ = ["Change", "preview"]


@dataclasses.dataclass(frozen=True)
class Change:
    """One case whose code the templates change: the unified diff."""

    case: str
    diff: str


def preview(entries: Iterable[Entry], base: Any, mine: Any) -> tuple[list[Change], int]:
    """Each entry's code with ``base`` (the shipped templates, a
    ``Templates``) and with ``mine``; the changed cases, and how many
    cases were rendered (a case with templates of its own is not one)."""
    changes, count = [], 0
    for entry in entries:
        case = entry.case()
        if case[2] is not None:
            continue
        count += 1
        before, after = entry.code(base, case), entry.code(mine, case)
        if before != after:
            diff = difflib.unified_diff(
                before.splitlines(True),
                after.splitlines(True),
                f"{entry.key} (shipped templates)",
                f"{entry.key} (yours)",
            )
            changes.append(Change(entry.key, "".join(diff)))
    return changes, count
