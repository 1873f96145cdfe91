"""``Generated``: generated code and what it needs to run (what
``generate`` returns, what an artifact stores) — a plain record: the code,
its compiled form, and its linkage (entry name, binder, convention,
submodule names, constants, inlined pieces), with the IR when there is one.
It knows no store: ``load`` (``loading.py``) runs it, the artifact modules
save and read it (``save`` is a door to them, imported only when called)."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import Record, record

if TYPE_CHECKING:
    from .ir import Program
    from .rendering import Templates

__all__ = ["Generated"]


@record
class Generated(Record):
    """Generated code and what it needs to run.

    ``submod_names`` are the qualified names of the children called through
    bindings (in binding order; the vllm convention lists inlined children
    too, in first-call order), ``consts`` the lifted constant objects (in
    binding order), ``submods`` the children found on the graph module, used
    by :func:`stitchgen.load` when no other binding is given (children named
    in ``opaque`` have none: the caller binds them). ``convention`` names how
    the code receives its bindings (``"closure"``, or ``"vllm"`` for the
    vllm template variant; see :mod:`stitchgen.conventions`). ``name``,
    ``binder`` and ``inlined`` (children the code calls by itself: no
    binding needed) come from ``program`` when it is given; code read from
    an artifact carries them without one.
    """

    code: str
    submod_names: list[str]
    consts: list[Any]
    program: Program | None
    submods: Mapping[str, Callable[..., Any]] = field(default_factory=dict, repr=False)
    convention: str = "closure"
    #: the templates that rendered ``code`` (None when read from an artifact)
    templates: Templates | None = field(default=None, repr=False, compare=False)
    #: ``code`` already compiled (by ``generate``'s check of templates of
    #: your own, or from an artifact), so loading does not compile it again;
    #: None for the shipped templates' text, which ``load`` compiles (once)
    code_object: types.CodeType | None = field(default=None, repr=False, compare=False)
    #: the entry function's name
    name: str = ""
    #: the binder's name (closure convention; ``""`` where there is none)
    binder: str = ""
    #: the children the code calls by itself (inlined: no binding needed, and
    #: one given — a compile cache hands over every piece it holds — is ignored)
    inlined: tuple[str, ...] = ()

    def __init__(
        self,
        code: str,
        submod_names: list[str],
        consts: list[Any],
        program: Program | None = None,
        submods: Mapping[str, Callable[..., Any]] | None = None,
        convention: str = "closure",
        templates: Templates | None = None,
        code_object: types.CodeType | None = None,
        name: str = "",
        binder: str = "",
        inlined: tuple[str, ...] = (),
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
        if program is not None:
            name = name or program.name
            binder = binder or program.binder
            inlined = inlined or tuple(s.path for s in program.submods if s.inlined)
        d["name"] = name
        d["binder"] = binder
        d["inlined"] = tuple(inlined)

    def save(self, path: str | os.PathLike[str], *, key: bytes | None = None) -> Path:
        """Save as an artifact directory for a compile cache; see
        :func:`stitchgen.load_artifact`. ``key`` signs it (HMAC-SHA256).
        ``path`` is replaced atomically only when it is absent, an empty
        directory or a stitchgen artifact; anything else there is an
        :class:`~stitchgen.errors.ArtifactError` naming it."""
        from .archive import save_artifact  # the store, imported only to save

        return save_artifact(self, path, key=key)
