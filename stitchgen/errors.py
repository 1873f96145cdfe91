"""Errors raised by stitchgen. Each names the node, template, binding, file
or case at fault.

Every error about a user's graph, templates, bindings, artifacts, golden
cases or files derives from :class:`StitchgenError` (catch that for
"anything stitchgen refused") and keeps a builtin base for code that catches
those. Misuse of an argument (a wrong type, an unknown option) is Python's
own ``TypeError``/``ValueError``; :mod:`stitchgen.compat` raises what vLLM's
codegen raises.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ArtifactError",
    "BindingError",
    "CodegenError",
    "GoldenError",
    "LeftAsCallWarning",
    "ProgramError",
    "StaleTemplateWarning",
    "StitchgenError",
    "TemplateDirError",
    "TemplateError",
    "describe_node",
]


def describe_node(node: Any) -> str:
    """``node 'add_1' (op call_function, target operator.add)``"""
    target = node.target
    if callable(target) and not isinstance(target, str):
        module = getattr(target, "__module__", None)
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        target = f"{module}.{name}" if module and name else repr(target)
    return f"node {node.name!r} (op {node.op}, target {target})"


class StitchgenError(Exception):
    """The base of every error stitchgen raises on purpose."""


class CodegenError(StitchgenError, RuntimeError):
    """A graph stitchgen cannot generate code for. ``node`` is the FX node at
    fault, when there is one; the message names it (name, op, target)."""

    def __init__(self, message: str, node: Any = None) -> None:
        self.node = node
        if node is not None:
            message = f"{describe_node(node)}: {message}"
        super().__init__(message)


class BindingError(StitchgenError, ValueError):
    """A submodule or constant binding is missing, unexpected or invalid when
    a generated function is loaded."""


class TemplateError(StitchgenError, RuntimeError):
    """A template failed to load, parse or render. The message starts with
    ``<template file>:<line>``; nothing is compiled when this is raised."""

    def __init__(self, message: str, template: str | None = None, lineno: int | None = None):
        self.template = template
        self.lineno = lineno
        super().__init__(message)


class TemplateDirError(TemplateError, FileNotFoundError):
    """A template directory that does not exist (also a ``FileNotFoundError``,
    which stitchgen raised for it before)."""


class ArtifactError(StitchgenError, ValueError):
    """An artifact that cannot be saved or trusted, or a path ``save`` will not
    replace; the message says which file, folder or constant, and why."""


class GoldenError(StitchgenError, ValueError):
    """A golden case, cases module or golden directory that stitchgen cannot
    use: an unknown case, a cases file that is missing or maps no functions, a
    builder that raised, or a file in the golden directory that stitchgen did
    not write and so will not replace (the message names it)."""


class ProgramError(StitchgenError, ValueError):
    """A :class:`~stitchgen.ir.Program` that breaks an IR invariant (the
    message names the function, the statement and the pass that ran last: see
    :func:`stitchgen.ir.verify`), or that cannot be written as Python (an entry
    name that would shadow a builtin or an imported module)."""


class LeftAsCallWarning(UserWarning):
    """An operator with subgraphs (an activation checkpoint, flex attention,
    a ``cond`` in a form stitchgen does not lower) is called as the operator,
    its subgraphs bound as modules, not lowered as code; the message names
    the node and why. Each distinct message is shown once (Python's default
    filter); ``warnings.filterwarnings("ignore", category=LeftAsCallWarning)``
    silences them."""


class StaleTemplateWarning(UserWarning):
    """Templates of yours override blocks whose shipped text changed since
    ``stitchgen templates lock`` recorded it (an upgrade of stitchgen): the
    override may need updating. Said once per process per directory;
    ``stitchgen templates check DIR`` names each block, with a diff."""


def a_or_an(noun: str) -> str:
    """``noun`` with its indefinite article: ``a float``, ``an int``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
