"""The templates a check reads: each loaded by name through the
environment's own loader (so a name resolves as it does when rendering),
parsed once into Jinja's AST, and indexed — its blocks, which block
encloses each, which are top-level, what it extends."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence

import jinja2
import jinja2.meta
from jinja2 import nodes

__all__ = ["Library", "Source", "shipped_definer"]


@dataclasses.dataclass
class Source:
    """One template: the name it is loaded by, its file, its AST."""

    name: str
    filename: str
    ast: nodes.Template
    user: bool
    text: str

    def __post_init__(self) -> None:
        self.blocks: dict[str, nodes.Block] = {}
        self.enclosing: dict[str, str | None] = {}
        self.top: list[nodes.Block] = []
        self._index(self.ast, None)
        found = next(iter(self.ast.find_all(nodes.Extends)), None)
        self.extends: str | None = None
        if found is not None and isinstance(found.template, nodes.Const):
            self.extends = str(found.template.value)

    @functools.cached_property
    def undeclared(self) -> frozenset[str] | None:
        """The names Jinja looks up in the context (``jinja2.meta``); None
        where Jinja cannot say (a template its compiler refuses)."""
        try:
            return frozenset(jinja2.meta.find_undeclared_variables(self.ast))
        except jinja2.TemplateError:
            return None

    def _index(self, node: nodes.Node, inside: str | None) -> None:
        for child in node.iter_child_nodes():
            if isinstance(child, nodes.Block):
                self.blocks.setdefault(child.name, child)
                self.enclosing.setdefault(child.name, inside)
                if inside is None:
                    self.top.append(child)
                self._index(child, child.name)
            else:
                self._index(child, inside)


class Library:
    """Templates loaded by name through ``env``'s loader, each parsed once;
    a file under one of ``user_dirs`` is the user's."""

    def __init__(self, env: jinja2.Environment, user_dirs: Sequence[str]) -> None:
        self.env = env
        self.user_dirs = [os.path.realpath(d) for d in user_dirs]
        self._sources: dict[str, Source] = {}
        self._names: list[str] | None = None

    def load(self, name: str) -> Source:
        """The template ``name`` (``TemplateNotFound``, ``TemplateSyntaxError``)."""
        if name not in self._sources:
            text, filename, _ = self.env.loader.get_source(self.env, name)  # type: ignore[union-attr]
            filename = filename or name
            ast = self.env.parse(text, name, filename)
            self._sources[name] = Source(name, filename, ast, self._mine(filename), text)
        return self._sources[name]

    def is_user(self, name: str) -> bool:
        """Does ``name`` resolve to a file of the user's? (Read, not parsed.)"""
        if name in self._sources:
            return self._sources[name].user
        _, filename, _ = self.env.loader.get_source(self.env, name)  # type: ignore[union-attr]
        return self._mine(filename or name)

    def _mine(self, filename: str) -> bool:
        real = os.path.realpath(filename)
        return any(real.startswith(d + os.sep) for d in self.user_dirs)

    def names(self) -> list[str]:
        """Every template name the loader knows."""
        if self._names is None:
            self._names = [n for n in self.env.list_templates() if n.endswith(".j2")]
        return self._names

    def chain(self, name: str) -> list[Source]:
        """``name`` and the templates it extends, most derived first; stops
        where a name is missing or a file extends itself."""
        chain = [self.load(name)]
        seen = {chain[0].filename}
        while chain[-1].extends is not None:
            try:
                parent = self.load(chain[-1].extends)
            except jinja2.TemplateError:
                break
            if parent.filename in seen:
                break
            seen.add(parent.filename)
            chain.append(parent)
        return chain


def shipped_definer(chain: Sequence[Source], block: str) -> Source | None:
    """The nearest template of ``chain`` (most derived first) that is not
    the user's and defines ``block``: the shipped text an override sits on."""
    return next((s for s in chain if block in s.blocks and not s.user), None)
