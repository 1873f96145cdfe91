"""Programs from ``torch.export``: control flow that reads the module's state
(parameters, buffers, constants, closures) is lowered as code, equal to
``ep.module()`` on every path."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
from oracle import assert_runs_same, assert_same

import stitchgen


class _LinearInBranch(torch.nn.Module):
    """A ``cond`` whose true branch calls an ``nn.Linear`` and reads a buffer."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("shift", torch.arange(4.0))

    def forward(self, x):
        return torch.cond(
            x.sum() > 0, lambda t: self.lin(t) + self.shift, lambda t: t - self.shift, (x,)
        )


class _WeightInLoop(torch.nn.Module):
    """A ``while_loop`` whose body reads a weight (an additional input)."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4) / 4)

    def forward(self, n, x):
        from torch._higher_order_ops.while_loop import while_loop

        def step(i, t):
            return i + 1, torch.tanh(t @ self.weight)

        return while_loop(lambda i, t: i < n, step, (torch.zeros_like(n), x))


class _Nested(torch.nn.Module):
    """A ``cond`` in a branch of a ``cond``, the inner one reading a weight,
    and a closure's tensor read in the outer one."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.scale = torch.tensor([1.0, 2.0, 3.0, 4.0])  # a constant, not a buffer

    def forward(self, x, y):
        bias = torch.ones(4) * 0.5  # a closure's tensor

        def inner(t):
            return torch.cond(t.mean() > 0, lambda u: self.lin(u), lambda u: u * self.scale, (t,))

        return torch.cond(x.sum() > 0, lambda t, u: inner(t) + bias, lambda t, u: t * u, (x, y))


@functools.cache
def _exported(kind: type) -> torch.export.ExportedProgram:
    model = kind()
    inputs = {_WeightInLoop: (torch.tensor(2), torch.randn(4))}.get(kind)
    inputs = inputs or (torch.randn(4),) * (2 if kind is _Nested else 1)
    return torch.export.export(model, inputs)


def _lowered(kind: type) -> tuple[torch.fx.GraphModule, str, object]:
    gm = _exported(kind).module()
    with warnings.catch_warnings():
        warnings.simplefilter("error", stitchgen.LeftAsCallWarning)  # every operator lowered
        generated = stitchgen.generate(gm)
    return gm, generated.code, stitchgen.load(generated, {"_guards_fn": gm._guards_fn})


def _paths(*inputs):
    """Each input set as given, and again with its first floating tensor
    requiring grad (the weights' gradients are then compared too)."""
    for args in inputs:
        yield args
        grad = [a.clone().requires_grad_() if a.is_floating_point() else a for a in args]
        yield tuple(grad)


@pytest.mark.slow
def test_a_branch_calling_a_linear_and_reading_a_buffer_is_an_if():
    gm, code, fn = _lowered(_LinearInBranch)
    assert "if gt:" in code and "aten_linear_default(" in code and "cond" not in code
    for args in _paths((torch.ones(4),), (-torch.ones(4),)):
        assert_runs_same(fn, gm, args)


@pytest.mark.slow
def test_a_loop_body_reading_a_weight_is_a_while():
    """At zero iterations the gradient is the identity's, as the README
    rules (test_control_flow.py holds it), not the operator's one-step one."""
    gm, code, fn = _lowered(_WeightInLoop)
    assert "while True:" in code and "while_loop" not in code.replace("while_loop_", "")
    assert_runs_same(fn, gm, (torch.tensor(0), torch.randn(4)))  # (its gradient: ruled, below)
    for n in (1, 3):
        for args in _paths((torch.tensor(n), torch.randn(4))):
            assert_runs_same(fn, gm, args)


@pytest.mark.slow
def test_nested_branches_reading_a_weight_a_constant_and_a_closure_are_ifs():
    gm, code, fn = _lowered(_Nested)
    assert code.count(" if ") + code.count("\n        if ") >= 2 and "cond(" not in code
    up, down = torch.ones(4), -torch.ones(4)
    for args in _paths((up, up), (up, down), (down, up), (down * 2, down)):
        assert_runs_same(fn, gm, args)


# -- the ExportedProgram itself, its checks written as code -------------------


class _Shaped(torch.nn.Module):
    """Two inputs related by a derived dimension (``y`` twice ``x``'s
    length, ``x``'s within [3, 16]), a keyword input, and a mutated buffer."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x, y, *, scale):
        self.calls.add_(1)
        return self.lin(x) * scale + y[: x.shape[0]] + y[x.shape[0] :] + self.calls


@functools.cache
def _shaped() -> torch.export.ExportedProgram:
    length = torch.export.Dim("length", min=3, max=16)
    return torch.export.export(
        _Shaped(),
        (torch.randn(5, 4), torch.randn(10, 4)),
        {"scale": 2.0},
        dynamic_shapes={"x": {0: length}, "y": {0: 2 * length}, "scale": None},
    )


def _outcome(fn, args, kwargs):
    """What a call gives: ``ok``, or the error's class and first line."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # (the class is what is compared)
        return type(exc), str(exc).splitlines()[0]
    return "ok"


#: calls of ``_Shaped``'s program: (args, kwargs); the first ones it takes
_CALLS = [
    ((torch.randn(5, 4), torch.randn(10, 4)), {"scale": 2.0}),
    ((torch.randn(16, 4), torch.randn(32, 4)), {"scale": 2.0}),
    ((torch.randn(3, 4), torch.randn(6, 4)), {"scale": 2.0}),
    ((torch.randn(2, 4), torch.randn(4, 4)), {"scale": 2.0}),  # below the bound
    ((torch.randn(17, 4), torch.randn(34, 4)), {"scale": 2.0}),  # above it
    ((torch.randn(5, 4), torch.randn(11, 4)), {"scale": 2.0}),  # y is not twice x
    ((torch.randn(5, 3), torch.randn(10, 4)), {"scale": 2.0}),  # a static size
    ((torch.randn(5, 4), torch.randn(10, 4)), {"scale": 3.0}),  # a specialized scalar
    ((torch.randn(5, 4), torch.randn(10, 4), 2.0), {}),  # the keyword as positional
    ((torch.randn(5, 4), torch.randn(10, 4)), {"scale": 2.0, "junk": 1}),
    ((torch.randn(5, 4),), {"scale": 2.0}),  # an input missing
    (([torch.randn(5, 4)], torch.randn(10, 4)), {"scale": 2.0}),  # a list for a tensor
    ((torch.randn(5), torch.randn(10, 4)), {"scale": 2.0}),  # a dimension missing
    ((5, torch.randn(10, 4)), {"scale": 2.0}),  # no tensor
]


def test_an_exported_program_is_taken_whole_with_its_checks_as_code():
    """``generate(ep)``: export's checks as plain lines, with no binding;
    each refuses what ``ep.module()`` refuses, with the same class and
    message, and what it takes is equal."""
    ep = _shaped()
    generated = stitchgen.generate(ep)
    code = generated.code
    assert "def execution_fn(*args, **kwargs):" in code
    for line in (
        "if not x.size()[0] <= 16:",
        'raise AssertionError("Guard failed: x.size()[0] <= 16")',
        "if not x.size()[0] >= 3:",
        "if not y.size()[0] <= 32:",  # (the relation: the tracer's own words, by version)
        "if not x.size()[1] == 4:",
        "if not scale == 2.0:",
    ):
        assert line in code, line
    assert not generated.program.submods and "_guards_fn" not in code
    fn = stitchgen.load(generated)
    module = ep.module()
    outcomes = [(_outcome(module, *call), _outcome(fn, *call)) for call in _CALLS]
    assert [want for want, _ in outcomes[:3]] == ["ok"] * 3
    assert all(want != "ok" for want, _ in outcomes[3:])
    for (want, got), call in zip(outcomes, _CALLS, strict=True):
        assert got == want, call


def test_what_an_exported_program_is_given_is_checked_against_its_spec():
    """The structure ``ep.module()``'s pre-hook checks: a nested input's
    keys, a list's length, as its own ``ValueError``; every input a leaf
    takes the quick test."""
    from torch.utils import _pytree as pytree

    from stitchgen.runtime import inputs

    spec = pytree.tree_structure(((1, {"a": 1}), {"k": 1}))
    assert inputs((1, {"a": 2}), {"k": 3}, spec, 2, ("k",), False) == [1, 2, 3]
    for args, kwargs in [((1, {"b": 2}), {"k": 3}), ((1, {"a": 2}, 4), {"k": 3})]:
        with pytest.raises(ValueError, match="Trying to flatten user inputs"):
            inputs(args, kwargs, spec, 2, ("k",), False)
    flat = pytree.tree_structure(((1, 2), {}))
    assert inputs((1, 2), {}, flat, 2, (), True) == [1, 2]
    with pytest.raises(ValueError, match="Trying to flatten user inputs"):
        inputs(([1], 2), {}, flat, 2, (), True)


@pytest.mark.slow
def test_compile_shares_the_programs_state_and_writes_its_buffer():
    """``compile(ep)`` reads the program's own parameters, as
    ``ep.module()`` does, and adds to its mutated buffer call after call."""
    ep = _shaped()
    fn, module = stitchgen.compile(ep), ep.module()
    args, kwargs = (torch.randn(5, 4), torch.randn(10, 4)), {"scale": 2.0}
    for _ in range(2):
        assert_runs_same(lambda *a: fn(*a, **kwargs), lambda *a: module(*a, **kwargs), args, module)
    assert module.calls is ep.state_dict["calls"]  # (one buffer: fn adds to it too)
    ep = _exported(_LinearInBranch)
    fn, x = stitchgen.compile(ep), torch.ones(4)
    weight = ep.state_dict["lin.weight"]
    before = fn(x)
    with torch.no_grad():
        weight.add_(1.0)
    try:
        after = fn(x)
        assert not torch.equal(before, after)
        assert_same(after, ep.module()(x))
    finally:
        with torch.no_grad():
            weight.sub_(1.0)


@pytest.mark.slow
def test_check_inputs_false_leaves_the_checks_out():
    ep = _shaped()
    code = stitchgen.generate(ep, check_inputs=False).code
    assert "raise" not in code and "def execution_fn(x, y, scale):" in code
    fn = stitchgen.compile(ep, check_inputs=False)
    assert fn(torch.randn(2, 4), torch.randn(4, 4), scale=3.0).shape == (2, 4)  # unchecked


@pytest.mark.slow
def test_a_check_stitchgen_cannot_write_refuses_the_program_naming_it():
    class Nan(torch.nn.Module):
        def forward(self, x, *, s):
            return x * 2

    ep = torch.export.export(Nan(), (torch.randn(3),), {"s": float("nan")})
    said = r"'(math\.isnan\(s\)|s == nan)' is in a form"  # (torch 2.12 writes the second)
    with pytest.raises(stitchgen.CodegenError, match=said):
        stitchgen.generate(ep)
    assert "isnan" not in stitchgen.generate(ep, check_inputs=False).code


@pytest.mark.slow
def test_a_lifted_graph_module_with_weights_in_branches_is_lowered():
    """``ep.graph_module``: the weights are inputs (lifted), and the
    branches that read them are ``if``s."""
    ep = _exported(_LinearInBranch)
    gm = ep.graph_module
    code = stitchgen.generate(gm).code
    assert "if gt:" in code and "cond" not in code
    fn = stitchgen.compile(gm)
    state = [ep.state_dict[s.target] for s in ep.graph_signature.input_specs if s.target]
    for x in (torch.ones(4), -torch.ones(4)):
        assert_runs_same(fn, gm, (*state, x))


@pytest.mark.slow
@pytest.mark.parametrize("templates", ["profiled", "vllm"])
def test_an_exported_program_renders_under_the_shipped_variants(templates):
    ep = _shaped()
    fn, module = stitchgen.compile(ep, templates=templates), ep.module()
    for call in _CALLS:
        assert _outcome(fn, *call) == _outcome(module, *call), call


@pytest.mark.slow
def test_boxed_inputs_take_an_exported_programs_inputs_as_one_list():
    """``boxed=True``: the inputs in one list, in the exported order (a
    keyword last): the list is their structure; the other checks hold."""
    ep = _shaped()
    fn, module = stitchgen.compile(ep, boxed=True), ep.module()
    args, kwargs = _CALLS[0]
    boxed, called = lambda *a: fn([*a, *kwargs.values()]), lambda *a: module(*a, **kwargs)
    assert_runs_same(boxed, called, args, module)
    for args, kwargs in _CALLS[3:8]:
        assert _outcome(fn, ([*args, *kwargs.values()],), {}) == _outcome(module, args, kwargs)


@pytest.mark.slow
def test_an_artifact_of_an_exported_program_stands_alone(tmp_path):
    """Saved, it loads in a fresh process with no bindings and none of the
    lowering, the rendering or Jinja; it equals ``ep.module()``, checks
    included, and adds to its own copy of the mutated buffer call after call."""
    ep = _shaped()
    state = ep.state_dict["calls"]
    saved = state.clone()  # (where the artifact's own copy starts)
    path = stitchgen.generate(ep).save(tmp_path / "artifact")
    calls = [_CALLS[0], _CALLS[2], _CALLS[0], _CALLS[3], _CALLS[8]]
    torch.save(calls, tmp_path / "calls.pt")
    script = textwrap.dedent(
        f"""
        import sys, torch, stitchgen
        fn = stitchgen.load_artifact({str(path)!r})
        loaded = sorted(m for m in sys.modules if m == "jinja2" or m.startswith(
            ("stitchgen.lowering", "stitchgen.rendering", "stitchgen.exported")))
        outcomes = []
        for args, kwargs in torch.load({str(tmp_path / "calls.pt")!r}):
            try:
                outcomes.append(fn(*args, **kwargs))
            except Exception as e:
                outcomes.append((type(e).__name__, str(e).splitlines()[0]))
        torch.save((loaded, outcomes), {str(tmp_path / "out.pt")!r})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    loaded, outcomes = torch.load(tmp_path / "out.pt")
    assert loaded == []
    module = ep.module()
    try:
        for (args, kwargs), got in zip(calls, outcomes, strict=True):
            try:
                assert_same(got, module(*args, **kwargs))
            except Exception as exc:  # (refused: the same class and message)
                assert got == (type(exc).__name__, str(exc).splitlines()[0])
    finally:
        with torch.no_grad():
            state.copy_(saved)
    assert torch.equal(ep.state_dict["calls"], saved)  # the saved program's own: not written


# -- stitchgen export PROGRAM.pt2 DIR ----------------------------------------


@pytest.mark.slow
def test_the_export_command_writes_an_artifact_show_describes(tmp_path, capsys):
    from stitchgen.cli import main

    program = tmp_path / "shaped.pt2"
    torch.export.save(_shaped(), program)
    assert main(["export", str(program), str(tmp_path / "out")]) == 0
    assert "wrote" in capsys.readouterr().out
    fn, module = stitchgen.load_artifact(tmp_path / "out"), _shaped().module()
    for call in _CALLS[3:]:  # (refused: the buffer is not written)
        assert _outcome(fn, *call) == _outcome(module, *call), call
    assert main(["show", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert "inputs (an exported program's" in shown and "2 positional, keywords ['scale']" in shown
    assert "AssertionError: Guard failed: x.size()[0] <= 16" in shown
    assert "const_lin_weight: Tensor[4, 4] torch.float32 on cpu (in consts.pt)" in shown


@pytest.mark.slow
def test_the_export_command_refuses_in_one_line_and_leaves_nothing(tmp_path, capsys):
    from stitchgen.cli import main

    program = tmp_path / "shaped.pt2"
    torch.export.save(_shaped(), program)
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    junk = tmp_path / "junk.pt2"
    junk.write_text("not a program")
    for argv, code, said in [
        ([str(program), str(occupied)], 1, "is not a stitchgen artifact (it holds notes.txt)"),
        ([str(junk), str(tmp_path / "a")], 1, "not a program torch.export.load reads"),
        ([str(tmp_path / "none.pt2"), str(tmp_path / "b")], 2, "does not exist"),
        ([str(program), str(tmp_path / "c"), "--import", "no_such_module"], 2, "no_such_module"),
        ([str(program), str(junk / "d")], 1, "cannot save an artifact"),
    ]:
        assert main(["export", *argv]) == code, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err and err.startswith("stitchgen export: error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.pt2", "occupied", "shaped.pt2"]
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]


@pytest.mark.slow
def test_a_program_whose_checks_torch_runs_in_its_pre_hook_is_refused():
    """With no example inputs, ``ep.module()`` checks in a pre-hook of its
    own (no check child): refused, never unchecked, unless asked."""
    import copy

    ep = copy.copy(_shaped())
    ep.example_inputs = None
    with pytest.raises(stitchgen.CodegenError, match="records no example inputs"):
        stitchgen.generate(ep)
    assert "raise" not in stitchgen.generate(ep, check_inputs=False).code


@pytest.mark.slow
def test_a_dimension_of_min_two_takes_sizes_zero_and_one_as_ep_module_does():
    class Doubled(torch.nn.Module):
        def forward(self, x):
            return x * 2

    dim = torch.export.Dim("n", min=2, max=8)
    ep = torch.export.export(Doubled(), (torch.randn(4, 3),), dynamic_shapes=({0: dim},))
    fn, module = stitchgen.compile(ep), ep.module()
    for rows in (0, 1, 2, 8, 9):
        call = ((torch.randn(rows, 3),), {})
        assert _outcome(fn, *call) == _outcome(module, *call), rows
    assert _outcome(fn, (torch.randn(9, 3),), {})[0] is AssertionError


@pytest.mark.slow
def test_a_programs_own_output_type_is_imported_as_the_store_allows(tmp_path):
    """A ``transformers`` model's output class, a pytree node of its own:
    its artifact names the module to import (an ``ArtifactError`` until it
    is allowed), and loads with ``allow_imports`` equal to ``ep.module()``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, use_cache=False,
    )  # fmt: skip
    torch.manual_seed(0)
    ids = torch.randint(0, 64, (1, 6))
    ep = torch.export.export(LlamaForCausalLM(config).eval(), (ids,))
    path = stitchgen.generate(ep).save(tmp_path / "artifact")
    torch.save(ids, tmp_path / "ids.pt")
    script = textwrap.dedent(
        f"""
        import torch, stitchgen
        try:
            stitchgen.load_artifact({str(path)!r})
        except stitchgen.ArtifactError as e:
            print(e)
        fn = stitchgen.load_artifact({str(path)!r}, allow_imports=["transformers.modeling_outputs"])
        out = fn(torch.load({str(tmp_path / "ids.pt")!r}))
        torch.save((type(out).__qualname__, out.logits), {str(tmp_path / "out.pt")!r})
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True
    )
    assert "imports ['transformers.modeling_outputs'], not imported" in done.stdout
    kind, logits = torch.load(tmp_path / "out.pt")
    with torch.no_grad():
        expected = ep.module()(ids)
    assert kind == type(expected).__qualname__ == "CausalLMOutputWithPast"
    assert_same(logits, expected.logits.detach())


@pytest.mark.slow
def test_an_exported_four_layer_llama_equals_ep_module():
    """The benchmark's model (``benchmarks/bench.py``, exported): hidden 64,
    a sequence of 8, ``use_cache=False``; with its checks as code."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        use_cache=False,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 128, (1, 8))
    ep = torch.export.export(model, (ids,))
    fn, module = stitchgen.compile(ep), ep.module()
    with torch.no_grad():
        assert_runs_same(lambda i: fn(i).logits, lambda i: module(i).logits, (ids,), module)
    assert _outcome(fn, (torch.randint(0, 128, (1, 9)),), {}) == _outcome(
        module, (torch.randint(0, 128, (1, 9)),), {}
    )
