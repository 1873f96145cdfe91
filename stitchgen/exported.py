"""Programs from ``torch.export``: an ``ExportedProgram`` as the graph the
lowering takes, with export's input checks as code.

:func:`unlifted` is ``ep.module()``, torch's own unlifting (parameters,
buffers and constants as attributes the graph reads, a mutated buffer
written in place), whose check child (the ``_guards_fn`` that
``ep.module()`` calls with the flat inputs) is an :class:`InputChecks`: it
runs torch's checks as before, so the module stays the oracle, and it holds
the same checks as :class:`~stitchgen.ir.Check` statements, which the
lowering writes where the call was, with no binding.

The checks are torch's own list, taken as ``ep.module()`` builds it (the
range constraints' bounds and the relations between dimensions, static
sizes, specialized scalars, and the tracer's guards), each read from the
text torch writes (``L['x'].size()[0] <= 64``) against the forms this
module can write: comparisons, chained or joined by ``and``, of sizes,
inputs, integers and arithmetic (``+ - * // %``). Any other form refuses
the program, naming the check: a check is never dropped. Each raises what
torch's does, ``AssertionError("Guard failed: x.size()[0] <= 64")``.

Imported for an exported program only.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from .errors import CodegenError
from .ir import ARGUMENT, BinOp, Check, Compare, Expr, Literal, Name, Size

__all__ = ["InputChecks", "is_exported", "unlifted"]


def is_exported(value: object) -> bool:
    """Is ``value`` a ``torch.export.ExportedProgram``?"""
    program = getattr(getattr(torch, "export", None), "ExportedProgram", None)
    return program is not None and isinstance(value, program)


class InputChecks(torch.nn.Module):
    """``ep.module()``'s check child: called with the flat inputs, it runs
    torch's checks (``guards``, the child it replaces); ``stitchgen_checks``
    holds them as code, each reading the call's i-th argument as the
    :class:`~stitchgen.ir.Name` ``ARGUMENT.format(i)`` (:data:`~stitchgen.ir.ARGUMENT`)."""

    def __init__(self, checks: tuple[Check, ...], guards: Callable[..., Any]) -> None:
        super().__init__()
        self.stitchgen_checks = checks
        self._guards = guards

    def forward(self, *args: Any) -> None:
        self._guards(*args)


def unlifted(ep: Any, checks: bool = True) -> fx.GraphModule:
    """``ep.module()`` with its check child an :class:`InputChecks` (a
    check this module cannot write: a :class:`CodegenError` naming it);
    without ``checks``, with none (the code then takes the inputs as
    ``gm.forward`` does, unchecked)."""
    with _recorded() as made:
        gm = ep.module()
    guards = getattr(gm, "_guards_fn", None)
    if not checks:
        if guards is not None:
            graph = gm.graph
            for node in graph.find_nodes(op="call_module", target="_guards_fn"):
                graph.erase_node(node)
            del gm._guards_fn
            gm.recompile()
        return gm
    if guards is not None and made:
        (code, paths), *_ = made
        gm._guards_fn = InputChecks(_checks(code, paths), guards)
    elif guards is not None:
        raise CodegenError(
            "this torch's ep.module() makes its check child in a way stitchgen does not read "
            "(no torch.export._unlift._convert_guards_code_to_fn); pass check_inputs=False "
            "to leave export's checks out"
        )
    elif gm.graph.find_nodes(op="placeholder"):
        raise CodegenError(
            "this program records no example inputs, so ep.module() checks its inputs in a "
            "pre-hook of its own (RuntimeError: Expected input at ...), which stitchgen does "
            "not write as code; pass check_inputs=False to leave the checks out"
        )
    return gm


# --------------------------------------------------------------------------
# torch's checks, as ep.module() makes them

_LOCK = threading.Lock()


@contextmanager
def _recorded() -> Iterator[list[tuple[list[str], list[Any]]]]:
    """What ``ep.module()`` makes its check child from, on this thread:
    the checks' text and the flat inputs' paths (recorded from the call
    of torch's ``_convert_guards_code_to_fn``, which is otherwise as it was)."""
    from torch.export import _unlift

    made: list[tuple[list[str], list[Any]]] = []
    thread = threading.get_ident()
    with _LOCK:  # (read and patched under it: one recording at a time)
        convert = getattr(_unlift, "_convert_guards_code_to_fn", None)
        if convert is None:  # (another torch: nothing recorded, see unlifted)
            yield made
            return

        def recording(code: list[str], paths: list[Any], *rest: Any, **kw: Any) -> Any:
            if threading.get_ident() == thread:
                made.append((list(code), list(paths)))
            return convert(code, paths, *rest, **kw)

        _unlift._convert_guards_code_to_fn = recording  # type: ignore[assignment]
        try:
            yield made
        finally:
            _unlift._convert_guards_code_to_fn = convert


def _checks(code: Sequence[str], paths: Sequence[Any]) -> tuple[Check, ...]:
    """Each check's text (``L['x'].size()[0] >= 4``) as the statements
    that refuse what it refuses."""
    sources = sorted(
        (("L" + pytree.keystr(p), i, _shown(p)) for i, p in enumerate(paths)),
        key=lambda s: -len(s[0]),  # (a path before any that it starts)
    )
    checks: list[Check] = []
    for text in code:
        actual, shown = text, text
        for source, index, name in sources:
            actual = actual.replace(source, ARGUMENT.format(index))
            shown = shown.replace(source, name)
        message = "Guard failed: " + ast.unparse(ast.parse(shown.replace("\n", ""), mode="eval"))
        try:
            tests = _tests(ast.parse(actual.strip(), mode="eval").body)
        except (SyntaxError, _Unwritable) as exc:
            raise CodegenError(
                f"export's input check {shown!r} is in a form stitchgen cannot write as code"
                f"{f' ({exc})' if str(exc) else ''}: it writes comparisons of sizes, inputs "
                "and integers; pass check_inputs=False to leave export's checks out"
            ) from None
        checks.extend(Check(test, "AssertionError", message) for test in tests)
    return tuple(checks)


def _shown(path: Any) -> str:
    """How torch's message names a flat input: ``x``, ``d['y']``."""
    head, *rest = path
    return str(getattr(head, "key", head)) + pytree.keystr(tuple(rest))


class _Unwritable(Exception):
    """A part of a check that this module cannot write."""


_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _tests(node: ast.expr) -> list[Expr]:
    """What must hold: a comparison each (a chain, and ``and``, split)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [test for value in node.values for test in _tests(value)]
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        tests: list[Expr] = []
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            if type(op) not in _COMPARE:
                raise _Unwritable(f"the operator {type(op).__name__}")
            tests.append(Compare(_value(left), _COMPARE[type(op)], _value(right)))
        return tests
    raise _Unwritable()


def _value(node: ast.expr) -> Expr:
    """A size, an input, a number or arithmetic on them."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bool):
        return Literal(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand)
        if isinstance(inner, Literal) and type(inner.value) in (int, float):
            return Literal(-inner.value)
        return BinOp(Literal(-1), "*", inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        return BinOp(_value(node.left), _ARITH[type(node.op)], _value(node.right))
    if isinstance(node, ast.Name) and node.id.startswith(ARGUMENT.format("")):
        return Name(node.id)
    if (  # x.size()[i]
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "size"
        and not node.value.args
        and not node.value.keywords
        and isinstance(node.slice, ast.Constant)
        and type(node.slice.value) is int
    ):
        return Size(_value(node.value.func.value), node.slice.value)
    raise _Unwritable(ast.unparse(node))
