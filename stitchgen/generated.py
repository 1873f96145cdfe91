"""``Generated``: generated code and what it needs to run (what
``generate`` returns, what an artifact stores)."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import Record, freeze

if TYPE_CHECKING:
    from .ir import Program
    from .rendering import Templates

__all__ = ["Generated"]


@freeze
@dataclass(init=False, repr=False, eq=False)
class Generated(Record):
    """Generated code and what it needs to run.

    ``submod_names`` are the qualified names of the children called through
    bindings (in binding order; the vllm convention lists inlined children
    too, in first-call order), ``consts`` the lifted constant objects (in
    binding order), ``submods`` the children found on the graph module, used
    by :func:`stitchgen.load` when no other binding is given (children named
    in ``opaque`` have none: the caller binds them). ``convention`` names how
    the code receives its bindings (``"closure"``, or ``"vllm"`` for the
    vllm template variant; see :mod:`stitchgen.conventions`).
    """

    code: str
    submod_names: list[str]
    consts: list[Any]
    program: Program
    submods: Mapping[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    convention: str = "closure"
    #: the templates that rendered ``code`` (None when read from an artifact)
    templates: Templates | None = field(default=None, repr=False, compare=False)
    #: ``code`` already compiled (by ``generate``'s check of templates of
    #: your own, or from an artifact), so loading does not compile it again;
    #: None for the shipped templates' text, which ``load`` compiles (once)
    code_object: types.CodeType | None = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        code: str,
        submod_names: list[str],
        consts: list[Any],
        program: Program,
        submods: Mapping[str, Callable[..., Any]] | None = None,
        convention: str = "closure",
        templates: Templates | None = None,
        code_object: types.CodeType | None = None,
    ) -> None:
        d = self.__dict__
        d["code"] = code
        d["submod_names"] = submod_names
        d["consts"] = consts
        d["program"] = program
        d["submods"] = {} if submods is None else submods
        d["convention"] = convention
        d["templates"] = templates
        d["code_object"] = code_object

    @property
    def name(self) -> str:
        return self.program.name

    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> Path:
        """Save as an artifact directory for a compile cache; see
        :func:`stitchgen.load_artifact`. ``key`` signs it (HMAC-SHA256)."""
        from .archive import save_artifact  # the store, imported only to save

        return save_artifact(self, path, key=key)
