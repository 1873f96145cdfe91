"""source_lines=True: each line made from a node with a recorded stack trace
ends with the user's source location, so a traceback through the generated
code names the model's file and line (no per-call cost: a comment)."""

import operator
import traceback

import black
import pytest
import torch
import torch.fx as fx
from oracle import assert_same

import stitchgen
from stitchgen.viewer import describe_artifact


class Gather(torch.nn.Module):
    def forward(self, x, idx):
        h = torch.relu(x) * 2
        picked = h[idx]  # fails at run time for an index out of range
        return torch.sigmoid(picked) + 1


def _picked_line():
    import inspect

    lines, start = inspect.getsourcelines(Gather.forward)
    return start + next(i for i, line in enumerate(lines) if "h[idx]" in line)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_a_traceback_through_the_code_names_the_models_line():
    model = Gather()
    backend = stitchgen.backend([torch.sigmoid], source_lines=True)
    compiled = torch.compile(model, backend=backend)
    x, idx = torch.randn(4, 3), torch.tensor([0, 2])
    assert_same(compiled(x, idx), model(x, idx))
    with pytest.raises(IndexError) as info:
        compiled(x, torch.tensor([0, 7]))
    text = "".join(traceback.format_exception(info.value))
    assert f"# test_lowering_source_lines.py:{_picked_line()} in forward" in text


def _graph_with_traces(trace):
    graph = fx.Graph()
    x = graph.placeholder("x")
    relu = graph.call_function(torch.relu, (x,))
    relu.meta["stack_trace"] = trace
    first = graph.call_function(operator.getitem, (relu, 0))
    first.meta["stack_trace"] = '  File "/src/pkg/model.py", line 7, in head\n    y = h[0]\n'
    graph.output((relu, first))
    return fx.GraphModule({}, graph)


def test_each_line_carries_the_innermost_frame_and_nothing_else():
    trace = (
        '  File "/home/u/train.py", line 90, in <module>\n    out = model(x)\n'
        '  File "/src/pkg/model.py", line 12, in forward\n    h = torch.relu(x)\n'
    )
    gm = _graph_with_traces(trace)
    code = stitchgen.generate(gm, source_lines=True).code
    assert "relu = torch_relu(x)  # model.py:12 in forward\n" in code
    assert "getitem = relu[0]  # model.py:7 in head\n" in code
    assert "#" not in stitchgen.generate(gm).code.split("\n", 1)[1]  # off by default
    assert_same(
        stitchgen.load(stitchgen.generate(gm, source_lines=True))(torch.ones(2)), gm(torch.ones(2))
    )


def test_the_environment_variable_turns_them_on(monkeypatch):
    gm = _graph_with_traces('  File "m.py", line 3, in f\n    relu\n')
    monkeypatch.setenv("STITCHGEN_SOURCE_LINES", "1")
    assert "# m.py:3 in f" in stitchgen.generate(gm).code
    assert "# m.py:3 in f" not in stitchgen.generate(gm, source_lines=False).code


def test_a_crafted_trace_stays_a_comment_on_every_template_set(tmp_path):
    trace = '  File "/x/evil\\nimport os.py", line 1, in f\\nos.system("x")\n    relu\n'
    gm = _graph_with_traces(trace)
    for variant in (None, "profiled", "vllm"):
        fast = stitchgen.generate(gm, source_lines=True, templates=variant, format=False)
        path = tmp_path / str(variant)
        path.mkdir()
        base = f"variants/{variant}/module.py.j2" if variant else "stitchgen/module.py.j2"
        (path / "module.py.j2").write_text(f'{{% extends "{base}" %}}\n')
        jinja = stitchgen.Templates(path, variant=variant)
        assert not jinja.builtin_in_effect  # rendered by Jinja
        slow = stitchgen.generate(gm, source_lines=True, templates=jinja, format=False)
        assert fast.code == slow.code
        assert "\nimport os" not in fast.code and "\nos.system" not in fast.code
        formatted = stitchgen.generate(gm, source_lines=True, templates=variant)
        assert formatted.code == black.format_str(fast.code, mode=black.Mode())
        assert_same(stitchgen.load(formatted)(torch.ones(2)), gm(torch.ones(2)))


def test_black_layout_holds_with_long_lines_and_their_comments():
    trace = '  File "/p/a_rather_long_module_name_for_a_model.py", line 123, in forward\n    x\n'
    graph = fx.Graph()
    xs = [graph.placeholder(f"input_number_{i}") for i in range(4)]
    total = graph.call_function(torch.stack, (xs,), {"dim": 0})
    total.meta["stack_trace"] = trace
    graph.output(total)
    gm = fx.GraphModule({}, graph)
    raw = stitchgen.generate(gm, source_lines=True, format=False).code
    assert stitchgen.generate(gm, source_lines=True).code == black.format_str(
        raw, mode=black.Mode()
    )


def test_the_dump_and_show_name_the_lines(tmp_path):
    gm = _graph_with_traces('  File "/p/model.py", line 5, in forward\n    relu\n')
    generated = stitchgen.generate(gm, source_lines=True, dump_dir=tmp_path / "dumps")
    (dumped,) = (tmp_path / "dumps").iterdir()
    assert "# model.py:5 in forward" in dumped.read_text()
    report, ok = describe_artifact(generated.save(tmp_path / "a"))
    assert ok and "# model.py:5 in forward" in report
