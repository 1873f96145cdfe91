"""What a program declares, across every graph the lowering reads:
:class:`Declarations` — the imports, the lifted constants, the children
called through bindings, the inlined functions (twins sharing one) and the
names found for objects. One per program; the lowering of each graph
(:mod:`stitchgen.lowering.lowerer`) asks it for references and adds to it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import torch.fx as fx

from ..ir import ConstDecl, ConstRef, Function, FunctionRef, GlobalRef, SubmodDecl, SubmodRef
from ..references import qualified_ref
from .reading import describe

__all__ = ["Declarations"]


class Declarations:
    """A program's declarations, in first-use order (``formats``: the name
    formats of constants, bindings and inlined functions)."""

    def __init__(self, formats: Mapping[str, str]) -> None:
        self.formats = formats
        #: modules the code imports (the references' modules)
        self.imports: set[str] = set()
        #: lifted constants: the objects, their declarations, and each
        #: object's index by id (the objects held, so ids stay unique)
        self.const_values: list[Any] = []
        self.const_decls: list[ConstDecl] = []
        self.const_index: dict[int, int] = {}
        #: children called through bindings (and, where the convention lists
        #: them, inlined ones): declarations, the object found for each
        #: (None: named opaque), and each child's index by qualified name
        self.submod_decls: list[SubmodDecl] = []
        self.submod_values: list[Any] = []
        self.submod_index: dict[str, int] = {}
        #: the distinct inlined functions, in order (a child's own children first)
        self.functions: list[Function] = []
        #: inlined children by qualified name -> their function's index (twins share one)
        self.function_index: dict[str, int] = {}
        #: a twin's fingerprint -> the first child lowered with it
        self.twin_of: dict[tuple[Any, ...], str] = {}
        #: children sharing a twin's function (their keywords may differ)
        self.sharing: dict[str, fx.GraphModule] = {}
        #: for a child sharing its twin's function: its keywords -> the function's
        self.keywords: dict[str, dict[str, str]] = {}
        #: ``qualified_ref`` answers by object id (call targets repeat a lot)
        self.refs_by_id: dict[int, tuple[Any, GlobalRef | None]] = {}

    def continue_pool(self, values: tuple[Any, ...], index: Mapping[int, int]) -> None:
        """Number constants after a shared pool's (a ``ConstPool``'s fields)."""
        self.const_values = list(values)
        self.const_index = dict(index)
        hint = self.formats["const"]
        self.const_decls = [
            ConstDecl(hint.format(hint=f"shared_{i}"), describe(v)) for i, v in enumerate(values)
        ]

    # -- children -------------------------------------------------------

    def submod(self, path: str, child: Any = None) -> SubmodRef:
        """The binding of the child ``path`` (declared on first use)."""
        index = self.declare(path, child=child)
        return SubmodRef(index, self.submod_decls[index].name)

    def declare(self, path: str, inlined: bool = False, child: Any = None) -> int:
        """The index of the child ``path``'s declaration (made on first use;
        ``child`` is the object found for it, None for one named opaque)."""
        index = self.submod_index.get(path)
        if index is None:
            index = self.submod_index[path] = len(self.submod_decls)
            name = self.formats["submod"].format(path=path)
            self.submod_decls.append(SubmodDecl(name, path, inlined))
            self.submod_values.append(child)
        return index

    def function_ref(self, path: str) -> FunctionRef | None:
        """The inlined function of the child ``path``, if it has one yet."""
        index = self.function_index.get(path)
        return None if index is None else self._function_ref(index)

    def _function_ref(self, index: int) -> FunctionRef:
        return FunctionRef(index, self.functions[index].name)

    def share(self, path: str, twin: str, child: fx.GraphModule) -> FunctionRef:
        """``path`` calls the function of ``twin``, a child lowered before
        with the same fingerprint."""
        index = self.function_index[path] = self.function_index[twin]
        self.sharing[path] = child
        return self._function_ref(index)

    def add_function(
        self, path: str, fn: Function, fingerprint: tuple[Any, ...] | None
    ) -> FunctionRef:
        """``fn``, the lowered child ``path``, placed after its own children
        and named by its place."""
        index = len(self.functions)
        name = self.formats["inlined"].format(path=path, index=index)
        self.function_index[path] = index
        self.functions.append(dataclasses.replace(fn, name=name))
        if fingerprint is not None:
            self.twin_of[fingerprint] = path
        return self._function_ref(index)

    def twin_keywords(self, path: str) -> dict[str, str]:
        """The keywords of ``path`` (a child sharing its twin's function) ->
        the shared function's: their placeholders may be named apart."""
        renamed = self.keywords.get(path)
        if renamed is None:
            fn = self.functions[self.function_index[path]]
            placeholders = self.sharing[path].graph.find_nodes(op="placeholder")
            mine = [str(n.target).lstrip("*") for n in placeholders]
            keywords = (p.keyword for p in fn.params)
            renamed = self.keywords[path] = dict(zip(mine, keywords, strict=True))
        return renamed

    # -- values ---------------------------------------------------------

    def target_ref(self, target: Callable[..., Any]) -> GlobalRef | ConstRef:
        """How the code reaches a call target: by name, else lifted."""
        known = self.refs_by_id.get(id(target))
        if known is not None and known[1] is not None:
            return known[1]  # the common case: an op seen before, by name
        return self.reference(target, getattr(target, "__name__", None) or type(target).__name__)

    def reference(self, value: Any, hint: str) -> GlobalRef | ConstRef:
        """An exact qualified name for ``value``, else a lifted binding."""
        key = id(value)
        known = self.refs_by_id.get(key)
        if known is not None:
            ref = known[1]
        else:
            ref = qualified_ref(value)
            self.refs_by_id[key] = (value, ref)  # holds value: its id stays unique
            if ref is not None and ref.module != "builtins":
                self.imports.add(ref.module)
        if ref is not None:
            return ref
        return self.lift(value, hint)

    def lift(self, value: Any, hint: str) -> ConstRef:
        """``value`` as a lifted constant (one binding per object)."""
        index = self.const_index.get(id(value))
        if index is None:
            index = self.const_index[id(value)] = len(self.const_values)
            self.const_values.append(value)  # keeps the object (and its id) alive
            decl = ConstDecl(self.formats["const"].format(hint=hint), describe(value))
            self.const_decls.append(decl)
        return ConstRef(index, self.const_decls[index].name)
