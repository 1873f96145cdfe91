"""What the checks of a ``Templates`` report: each :class:`Problem` (a
mistake, at a file and line) and the stale overrides. Plain records, no
Jinja: ``rendering`` names them without importing the checks."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["LOCK", "Problem", "TemplateReport"]

#: the lock a template directory may hold (:mod:`stitchgen.authoring.lock`)
LOCK = "stitchgen.lock"


@dataclasses.dataclass(frozen=True)
class Problem:
    """One mistake: ``file:line: message``."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclasses.dataclass(frozen=True)
class TemplateReport:
    """The problems in a ``Templates``' own templates, and the overridden
    blocks whose shipped text changed since the lock
    (:class:`stitchgen.authoring.lock.Stale`)."""

    problems: list[Problem]
    stale: list[Any]

    @property
    def clean(self) -> bool:
        """No problem and nothing stale."""
        return not self.problems and not self.stale

    def lines(self) -> list[str]:
        """One line per problem; each stale block with the diff of its base."""
        out = [str(p) for p in self.problems]
        for item in self.stale:
            out.append(item.describe())
            out.extend("    " + line for line in item.diff().splitlines())
        return out
