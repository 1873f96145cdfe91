"""Call targets are looked up once, where the module is bound: a call reads
one name, never ``torch.ops.aten.mm.default`` per call."""

import dis

import torch
import torch.fx as fx
from oracle import assert_runs_same

import stitchgen
from stitchgen.demo import split_decoder


def _inlined_functions(fn):
    """The entry and the functions its closure reaches (inlined pieces)."""
    seen, todo = [], [fn]
    while todo:
        f = todo.pop()
        seen.append(f)
        for cell in f.__closure__ or ():
            value = cell.cell_contents
            if callable(value) and getattr(value, "__code__", None) is not None:
                if value not in seen:
                    todo.append(value)
    return seen


def _attribute_reads(code):
    reads = ("LOAD_ATTR", "LOAD_METHOD")
    return [i.argval for i in dis.get_instructions(code) if i.opname in reads]


def test_each_target_is_bound_once_to_the_very_same_object():
    gm, inputs = split_decoder(2)
    generated = stitchgen.generate(gm)
    refs = [t.ref for t in generated.program.targets]
    assert len(refs) == len(set(refs))  # each distinct target once
    names = {t.name: t.ref for t in generated.program.targets}
    assert names["aten_mm_default"] == stitchgen.ir.GlobalRef("torch", "ops.aten.mm.default")
    fn = stitchgen.load(generated)
    cells = {
        name: cell.cell_contents
        for f in _inlined_functions(fn)
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or (), strict=True)
    }
    assert cells["aten_mm_default"] is torch.ops.aten.mm.default
    assert cells["aten_rsqrt_default"] is torch.ops.aten.rsqrt.default
    assert_runs_same(fn, gm, inputs)


def test_a_call_follows_no_attribute_chain():
    gm, inputs = split_decoder(1)
    fn = stitchgen.compile(gm)
    for f in _inlined_functions(fn):
        assert "torch" not in f.__code__.co_names, f.__name__
        assert not {"ops", "aten", "default"} & set(_attribute_reads(f.__code__)), f.__name__


def test_the_vllm_convention_binds_them_as_module_globals():
    gm, inputs = split_decoder(1)
    code, names, consts = stitchgen.compat.generate_execution_code(gm)
    assert "\naten_mm_default = torch.ops.aten.mm.default\n" in code
    assert "torch.ops.aten.mm.default(" not in code
    fn = stitchgen.compat.compile_execution_fn(code, {}, names, consts)
    assert fn.func.__globals__["aten_mm_default"] is torch.ops.aten.mm.default
    assert_runs_same(fn, gm, inputs)


def test_builtins_keep_their_bare_names_and_node_names_never_collide():
    graph = fx.Graph()
    x = graph.placeholder("x")
    n = graph.call_function(len, (x,))
    clash = graph.call_function(torch.ops.aten.mul.Tensor, (x, x), name="aten_mul_Tensor")
    graph.output((n, graph.call_function(torch.ops.aten.mul.Tensor, (clash, x))))
    gm = fx.GraphModule({}, graph)
    generated = stitchgen.generate(gm)
    assert "len(x)" in generated.code
    assert [t.name for t in generated.program.targets] == ["aten_mul_Tensor"]
    assert "aten_mul_Tensor_1 = aten_mul_Tensor(x, x)" in generated.code
    x = torch.randn(3)
    assert_runs_same(stitchgen.load(generated), gm, (x,))
