"""Specimen graphs shipped with stitchgen: what a template author's tools
render when a project names no cases of its own.

Between them they hold every statement kind (an assignment, piece calls
unpacked and not, a getitem, frees, a return, a boxed function's
unboxing, an ``if`` with a piece call inside, a ``while`` with its break
and rebinding, input checks), inlined and bound pieces, constants and a
tuple output; each renders under whatever convention the templates in use choose. They are
built from ``fx.Graph`` by hand, so their code is the same on every
supported torch: the lock records what the shipped blocks emit on them
(:func:`emitted`, for :mod:`stitchgen.authoring.lock`), and ``templates
diff`` previews on them where a project names no cases.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import jinja2
import torch
import torch.fx as fx

if TYPE_CHECKING:
    from ..emitter import Variant

__all__ = ["SPECIMENS", "Specimen", "emitted", "previews"]


class Specimen:
    """A specimen: the graph, inputs to call it with, the children kept
    opaque, and the ``generate`` options it needs (``boxed``)."""

    def __init__(
        self,
        gm: fx.GraphModule,
        inputs: tuple[Any, ...],
        submods: tuple[str, ...] = (),
        **options: Any,
    ) -> None:
        self.gm, self.inputs, self.submods, self.options = gm, inputs, submods, options

    def fits(self, templates: Any) -> bool:
        """Can ``templates`` (a ``Templates``) render it? (A boxed entry
        needs a convention with boxed inputs.)"""
        return not self.options.get("boxed") or templates.convention.boxed


class _Scale(torch.nn.Module):
    """A child that is not a GraphModule: always called through its binding."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.5


def _graph_module(root: dict[str, Any], build: Callable[[fx.Graph], Any]) -> fx.GraphModule:
    graph = fx.Graph()
    graph.output(build(graph))
    return fx.GraphModule(torch.nn.Module(), graph) if not root else fx.GraphModule(root, graph)


def _pair_piece() -> fx.GraphModule:
    """A piece returning two values."""

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (g.call_function(torch.relu, (x,)), g.call_function(operator.add, (x, 1)))

    return _graph_module({}, build)


def _triple_piece() -> fx.GraphModule:
    """A piece returning three values, of which the caller reads one."""

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return (x, g.call_function(operator.neg, (x,)), g.call_function(torch.sin, (x,)))

    return _graph_module({}, build)


def _pieces() -> Specimen:
    """Inlined and bound pieces, a getitem, constants (a tensor, ``inf``, a
    device) and a tuple output."""
    root = {
        "submod_0": _pair_piece(),
        "submod_1": _triple_piece(),
        "submod_2": _Scale(),
        "weight": torch.ones(3),
    }

    def build(g: fx.Graph) -> Any:
        x, y = g.placeholder("x"), g.placeholder("y")
        pair = g.call_module("submod_0", (x,))
        a = g.call_function(operator.getitem, (pair, 0))
        b = g.call_function(operator.getitem, (pair, 1))
        triple = g.call_module("submod_1", (b,))
        c = g.call_function(operator.getitem, (triple, 2))
        scaled = g.call_module("submod_2", (c,))
        weight = g.get_attr("weight")
        d = g.call_function(torch.mul, (scaled, weight))
        e = g.call_function(torch.clamp, (d,), {"max": float("inf")})
        moved = g.call_method("to", (y,), {"device": torch.device("cpu")})
        return (a, g.call_function(operator.add, (e, moved)))

    return Specimen(_graph_module(root, build), (torch.randn(3), torch.randn(3)), ("submod_1",))


def _boxed() -> Specimen:
    """A boxed entry (its inputs in one list it clears) with one piece."""
    root = {"submod_0": _pair_piece()}

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        pair = g.call_module("submod_0", (x,))
        return g.call_function(operator.getitem, (pair, 1))

    return Specimen(_graph_module(root, build), (torch.randn(4),), boxed=True)


def _no_pieces() -> Specimen:
    """A graph with no piece at all: a single value returned."""

    def build(g: fx.Graph) -> Any:
        x = g.placeholder("x")
        return g.call_function(operator.mul, (x, 2))

    return Specimen(_graph_module({}, build), (torch.randn(2),))


def _branch(op: Callable[..., Any], piece: bool) -> fx.GraphModule:
    """A ``cond`` branch: ``(op(a),)``, through a piece of its own if ``piece``."""
    root = {"submod_0": _pair_piece()} if piece else {}

    def build(g: fx.Graph) -> Any:
        a = g.placeholder("a")
        if piece:
            a = g.call_function(operator.getitem, (g.call_module("submod_0", (a,)), 1))
        return (g.call_function(op, (a,)),)

    return _graph_module(root, build)


def _control_flow() -> Specimen:
    """A ``torch.cond`` (a piece called inside a branch) and a
    ``while_loop``, lowered as an ``if`` and a ``while``."""

    def test(g: fx.Graph) -> Any:
        i, _ = g.placeholder("i"), g.placeholder("v")
        return g.call_function(operator.lt, (i, 3))

    def step(g: fx.Graph) -> Any:
        i, v = g.placeholder("i"), g.placeholder("v")
        return (g.call_function(operator.add, (i, 1)), g.call_function(operator.mul, (v, 2)))

    root = {
        "true_graph_0": _branch(torch.sin, piece=True),
        "false_graph_0": _branch(torch.cos, piece=False),
        "cond_graph_0": _graph_module({}, test),
        "body_graph_0": _graph_module({}, step),
    }
    higher_order = torch.ops.higher_order

    def build(g: fx.Graph) -> Any:
        x, n = g.placeholder("x"), g.placeholder("n")
        pred = g.call_function(operator.gt, (g.call_function(torch.sum, (x,)), 0))
        arms = (g.get_attr("true_graph_0"), g.get_attr("false_graph_0"))
        picked = g.call_function(higher_order.cond, (pred, *arms, (x,)))
        value = g.call_function(operator.getitem, (picked, 0))
        parts = (g.get_attr("cond_graph_0"), g.get_attr("body_graph_0"))
        looped = g.call_function(higher_order.while_loop, (*parts, (n, value), ()))
        return g.call_function(operator.getitem, (looped, 1))

    return Specimen(_graph_module(root, build), (torch.randn(3), torch.tensor(0)))


def _checked() -> Specimen:
    """Input checks written as code (an exported program's): a size
    against a bound, and two inputs' sizes against each other."""
    from ..exported import InputChecks
    from ..ir import ARGUMENT, BinOp, Check, Compare, Literal, Name, Size

    x, y = Name(ARGUMENT.format(0)), Name(ARGUMENT.format(1))
    checks = (
        Check(Compare(Size(x, 0), "<=", Literal(8)), "AssertionError", "x.size()[0] <= 8"),
        Check(
            Compare(BinOp(Literal(2), "*", Size(x, 0)), "==", Size(y, 0)),
            "AssertionError",
            "2 * x.size()[0] == y.size()[0]",
        ),
    )

    def guards(a: torch.Tensor, b: torch.Tensor) -> None:
        assert a.size()[0] <= 8, "x.size()[0] <= 8"
        assert 2 * a.size()[0] == b.size()[0], "2 * x.size()[0] == y.size()[0]"

    def build(g: fx.Graph) -> Any:
        a, b = g.placeholder("x"), g.placeholder("y")
        g.call_module("_guards_fn", (a, b))
        return g.call_function(torch.add, (g.call_function(torch.cat, ((a, a),)), b))

    root = {"_guards_fn": InputChecks(checks, guards)}
    return Specimen(_graph_module(root, build), (torch.randn(3), torch.randn(6)))


#: specimen name -> a function building it
SPECIMENS: dict[str, Callable[[], Specimen]] = {
    "pieces": _pieces,
    "boxed": _boxed,
    "no_pieces": _no_pieces,
    "control_flow": _control_flow,
    "checked": _checked,
}


def emitted(
    variant: str | Variant | None, blocks: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], dict[str, str]]:
    """What each shipped ``(template, block)`` of ``blocks`` writes on each
    specimen graph (every time it renders, in order), the specimens rendered
    by Jinja through the shipped templates of ``variant`` — the very text
    the fast path writes. A template or block that is gone is left out."""
    from ..pipeline import lower
    from ..rendering import Templates

    base = Templates(variant=variant)
    env = base.environment  # this object's own: the templates it wraps are no one else's
    sinks: dict[tuple[str, str], list[str]] = {}
    wrapped: set[tuple[int, str]] = set()
    for name, block in sorted(set(blocks)):
        try:
            template = env.get_template(name)
        except jinja2.TemplateError:
            continue
        if block not in template.blocks:
            continue
        sink = sinks[(name, block)] = []
        for alias in _aliases(env, name, template.filename):
            if (id(alias), block) not in wrapped:
                wrapped.add((id(alias), block))
                alias.blocks[block] = _recording(alias.blocks[block], sink)
    out: dict[tuple[str, str], dict[str, str]] = {key: {} for key in sinks}
    for specimen_name, build in SPECIMENS.items():
        specimen = build()
        if not specimen.fits(base):
            continue
        program = lower(specimen.gm, opaque=specimen.submods, templates=base, **specimen.options)
        for sink in sinks.values():
            sink.clear()
        base.through_jinja(program, shipped_function=False)
        for key, sink in sinks.items():
            out[key][specimen_name] = "".join(sink)
    return out


def _aliases(env: jinja2.Environment, name: str, filename: str | None) -> list[Any]:
    """The templates of ``env`` that load the file ``name`` names, by each
    name a render may use for it (``stitchgen/function.py.j2`` is also
    ``function.py.j2`` where nothing overrides it)."""
    found = []
    bare = name.removeprefix("stitchgen/")
    for alias in dict.fromkeys([name, bare, bare.rpartition("/")[2]]):
        try:
            template = env.get_template(alias)
        except jinja2.TemplateError:
            continue
        if filename and template.filename and os.path.samefile(template.filename, filename):
            found.append(template)
    return found


def _recording(render: Any, sink: list[str]) -> Any:
    """A block's render function that also appends what it writes to ``sink``."""
    from ..environment import Recording

    return Recording(render, lambda gen, chunk: sink.append(chunk))


def previews(templates: Any) -> list[tuple[str, Callable[[Any], str]]]:
    """The specimens ``templates`` can render, each with a function from a
    ``Templates`` to its code (``generate(..., format=True)``), for
    ``templates diff``: each renders once per ``Templates``."""
    import functools

    from ..pipeline import generate

    def code(specimen: Specimen) -> Callable[[Any], str]:
        return functools.cache(
            lambda t: (
                generate(specimen.gm, opaque=specimen.submods, templates=t, **specimen.options).code
            )
        )

    built = {name: build() for name, build in SPECIMENS.items()}
    return [(f"specimen {n}", code(s)) for n, s in built.items() if s.fits(templates)]


def rendered(templates: Any, cases: Any = None, shipped: Any = None) -> tuple[list[str], list[str]]:
    """``templates`` rendered on the specimens (``templates check``; ``cases``:
    :func:`previews` already made, whose renders are reused): the problems
    (code that is not Python: each error once, naming the specimens it
    fails, its first line saying what and where, the generated lines
    around it following, as the API prints them) and the
    notes (an override that changes how many frees, piece calls or returns a
    specimen gets, against ``shipped``, the shipped templates of its variant)."""
    from ..errors import StitchgenError
    from ..rendering import Templates

    notes: list[str] = []
    failed: dict[str, tuple[list[str], str]] = {}  # an error's place: its specimens, its text
    shipped = shipped or Templates(variant=templates.template_set)
    for key, code in previews(templates) if cases is None else cases:
        try:
            mine = code(templates)
        except StitchgenError as exc:
            text = str(exc)
            failed.setdefault(text.partition(": ")[0], ([], text))[0].append(key)
            continue
        ours, theirs = _counts(code(shipped)), _counts(mine)
        for what, count in theirs.items():
            if count != ours[what]:
                notes.append(
                    f"note: {key}: your templates give {count} {what} where the shipped ones "
                    f"give {ours[what]}"
                )
    problems = []  # one each, however many specimens it fails: the first shown, the others named
    for keys, text in failed.values():
        head, _, context = text.partition("\n")
        also = f" (also {', '.join(keys[1:])})" if keys[1:] else ""
        problems.append(f"{keys[0]}: {head}{also}" + (f"\n{context}" if context else ""))
    return problems, notes


def _counts(code: str) -> dict[str, int]:
    """The frees (names deleted), piece calls and returns in ``code``. A
    piece call is a call of a function the code defines or takes as a
    parameter (an inlined piece, a bound one), or of an item of a list it
    is given (vLLM's ``__vllm_submods__[i]``)."""
    import ast

    tree = ast.parse(code)
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            defined.add(node.name)
            defined.update(a.arg for a in (*node.args.args, *node.args.kwonlyargs))
    frees = calls = returns = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Delete):
            frees += sum(len(t.elts) if isinstance(t, ast.Tuple) else 1 for t in node.targets)
        elif isinstance(node, ast.Return):
            returns += 1
        elif isinstance(node, ast.Call):
            func = node.func
            calls += isinstance(func, ast.Subscript) or (
                isinstance(func, ast.Name) and func.id in defined
            )
    return {"frees": frees, "piece calls": calls, "returns": returns}
