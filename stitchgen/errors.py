"""Errors raised by stitchgen. Each names the node, template or binding at fault."""

from __future__ import annotations

from typing import Any

__all__ = ["BindingError", "CodegenError", "TemplateError"]


def describe_node(node: Any) -> str:
    """``node 'add_1' (op call_function, target operator.add)``"""
    target = node.target
    if callable(target) and not isinstance(target, str):
        module = getattr(target, "__module__", None)
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        target = f"{module}.{name}" if module and name else repr(target)
    return f"node {node.name!r} (op {node.op}, target {target})"


class CodegenError(RuntimeError):
    """A graph stitchgen cannot generate code for. ``node`` is the FX node at
    fault, when there is one; the message names it (name, op, target)."""

    def __init__(self, message: str, node: Any = None) -> None:
        self.node = node
        if node is not None:
            message = f"{describe_node(node)}: {message}"
        super().__init__(message)


class BindingError(ValueError):
    """A submodule or constant binding is missing, unexpected or invalid when
    a generated function is loaded."""


class TemplateError(RuntimeError):
    """A template failed to load, parse or render. The message starts with
    ``<template file>:<line>``; nothing is compiled when this is raised."""

    def __init__(self, message: str, template: str | None = None, lineno: int | None = None):
        self.template = template
        self.lineno = lineno
        super().__init__(message)
