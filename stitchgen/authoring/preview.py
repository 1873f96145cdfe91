"""``stitchgen templates diff``: what templates of yours change in the
generated code, case by case — a golden case rendered with the shipped
templates and with yours, as a unified diff."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Change", "preview"]


@dataclasses.dataclass(frozen=True)
class Change:
    """One case whose code the templates change: the unified diff."""

    case: str
    diff: str


def preview(
    cases: Iterable[tuple[str, Callable[[Any], str]]], base: Any, mine: Any
) -> tuple[list[Change], int]:
    """Each case's code (``code(templates)``) with ``base`` (the shipped
    templates, a ``Templates``) and with ``mine``; the changed cases, and
    how many cases were rendered."""
    changes, count = [], 0
    for key, code in cases:
        count += 1
        before, after = code(base), code(mine)
        if before != after:
            diff = difflib.unified_diff(
                before.splitlines(True),
                after.splitlines(True),
                f"{key} (shipped templates)",
                f"{key} (yours)",
            )
            changes.append(Change(key, "".join(diff)))
    return changes, count
