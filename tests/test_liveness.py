"""Dels: right after each last use, never for returned values, never skipped."""

import gc
import operator
import weakref

import torch
import torch.fx as fx

import stitchgen
from stitchgen import ir
from stitchgen.ir import Call, Del, Function, GetItem, GlobalRef, Name, Param, Return, TupleExpr
from stitchgen.passes import place_dels


def _body(fn):
    return [type(s).__name__ + (str(s.names) if isinstance(s, Del) else "") for s in fn.body]


F = GlobalRef("torch", "neg")


def _fn():
    return Function(
        "f",
        (Param("a"), Param("unused"), Param("b")),
        (
            Call("x", F, (Name("a"),)),
            Call("dead", F, (Name("x"),)),
            Call("y", F, (Name("x"), Name("b"))),
            GetItem("z", Name("y"), Name("b")),
            Return(TupleExpr((Name("z"), Name("a")))),
        ),
    )


def test_dels_follow_last_uses():
    assert _body(place_dels(_fn())) == [
        "Del('unused',)",  # a parameter nobody reads: before the first statement
        "Call",
        "Call",
        "Del('dead',)",  # made, never read: right after it is made
        "Call",
        "Del('x',)",
        "GetItem",
        "Del('b', 'y')",  # ordered by definition (parameters first)
        "Return",  # z and a are returned: never deleted
    ]


def test_pass_is_idempotent():
    once = place_dels(_fn())
    assert place_dels(once) == once


def test_no_del_is_skipped_near_the_end():
    """The seed skipped dels for the last two nodes; every local here dies."""
    fn = Function(
        "f",
        (Param("a"),),
        (Call("x", F, (Name("a"),)), Call("y", F, (Name("x"),)), Return(Name("y"))),
    )
    assert _body(place_dels(fn)) == ["Call", "Del('a',)", "Call", "Del('x',)", "Return"]


def _chain(n_pieces):
    """x -> p0 -> p1 -> ... each piece returning a 1-tuple; opaque pieces."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for i in range(n_pieces):
        out = graph.call_module(f"p{i}", (value,))
        value = graph.call_function(operator.getitem, (out, 0))
    graph.output(value)
    return graph


def test_intermediates_die_right_after_their_last_use():
    n = 4
    made = []  # weakrefs to each piece's output tensor
    alive_at_call = []

    def piece(i):
        def run(t):
            alive_at_call.append([ref() is not None for ref in made])
            out = t + 1
            made.append(weakref.ref(out))
            return (out,)

        return run

    submods = {f"p{i}": piece(i) for i in range(n)}
    gm = fx.GraphModule({name: torch.nn.Identity() for name in submods}, _chain(n))
    fn = stitchgen.compile(gm, submods)
    gc.disable()  # only reference counting may free here
    try:
        result = fn(torch.zeros(3))
    finally:
        gc.enable()
    # when piece i runs, only its own input (piece i-1's output) is alive
    assert alive_at_call == [[], [True], [False, True], [False, False, True]]
    assert [ref() is not None for ref in made] == [False, False, False, True]
    assert torch.equal(result, torch.full((3,), 4.0))


def test_unused_calls_still_run_in_graph_order():
    calls = []

    def piece(name):
        def run(t):
            calls.append(name)
            return (t,)

        return run

    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.call_module("first", (x,))  # result unused
    kept = graph.call_module("second", (x,))
    graph.call_module("third", (x,))  # result unused
    graph.output(graph.call_function(operator.getitem, (kept, 0)))
    names = ["first", "second", "third"]
    gm = fx.GraphModule({n: torch.nn.Identity() for n in names}, graph)
    submods = {n: piece(n) for n in names}
    generated = stitchgen.generate(gm, opaque=names)
    assert "first = call_first(x)\n        del first\n" in generated.code
    stitchgen.load(generated, submods)(torch.zeros(1))
    assert calls == names


def _two_pieces():
    graph = fx.Graph()
    x = graph.placeholder("x")
    first = graph.call_function(operator.getitem, (graph.call_module("p0", (x,)), 0))
    graph.output(graph.call_function(operator.getitem, (graph.call_module("p1", (first,)), 0)))
    return fx.GraphModule({"p0": torch.nn.Identity(), "p1": torch.nn.Identity()}, graph)


def test_boxed_inputs_die_after_their_last_use():
    """With the boxed convention the caller's list is cleared on entry, so an
    input dies after its last use even though the caller passed it; a plain
    call keeps it alive through the caller's reference."""
    seen = []

    def run(boxed):
        x = torch.randn(1000)
        ref = weakref.ref(x)
        submods = {"p0": lambda t: (t * 2,), "p1": lambda t: (seen.append(ref() is not None), t)}
        fn = stitchgen.compile(_two_pieces(), submods, boxed=boxed)
        if boxed:
            args = [x]
            del x
            fn(args)
            assert args == []
        else:
            fn(x)

    run(boxed=True)
    run(boxed=False)
    assert seen == [False, True]


def test_boxed_code_unpacks_and_clears_its_list():
    code = stitchgen.generate(_two_pieces(), boxed=True).code
    assert "def execution_fn(args):\n        (x,) = args\n        args.clear()\n" in code
    with __import__("pytest").raises(ValueError, match="not part of the vllm convention"):
        stitchgen.generate(_two_pieces(), boxed=True, templates="vllm")


def _unread_input():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.placeholder("unused")
    graph.output(graph.call_function(torch.relu, (x,)))
    return fx.GraphModule({}, graph)


def test_boxed_unpacking_is_a_statement_the_passes_see():
    program = stitchgen.lower(_unread_input(), boxed=True)
    entry = program.entry
    assert entry.params == (ir.Param("args"),)
    assert entry.opening == (ir.Unbox(("x", "unused"), "args"),)
    assert entry.body[0] is entry.opening[0]
    # liveness: the unread input dies right after the unpacking; the list is
    # consumed by it (emptied), so no del is written for it
    assert entry.body[1] == ir.Del(("unused",))
    assert not any("args" in ir.deletes(s) for s in entry.body if type(s) is ir.Del)
    code = stitchgen.generate(_unread_input(), boxed=True, format=False).code
    assert "x, unused = args\n        args.clear()\n        del unused\n" in code
    fn = stitchgen.compile(_unread_input(), boxed=True)
    inputs = [torch.randn(3), torch.randn(2)]
    expected = torch.relu(inputs[0])
    assert torch.equal(fn(inputs), expected) and inputs == []


def test_a_local_named_args_keeps_its_name_and_the_list_is_named_apart():
    graph = fx.Graph()
    args = graph.placeholder("args")
    graph.output(graph.call_function(torch.neg, (args,)))
    program = stitchgen.lower(fx.GraphModule({}, graph), boxed=True)
    assert program.entry.params == (ir.Param("args_1"),)
    assert program.entry.opening == (ir.Unbox(("args",), "args_1"),)
    fn = stitchgen.compile(fx.GraphModule({}, graph), boxed=True)
    t = torch.randn(3)
    assert torch.equal(fn([t]), -t)
