"""Graphs with a pytree calling convention (make_fx over dicts and tuples,
torch.export modules): the generated function takes and returns what the
GraphModule does."""

import pytest
import torch
from builders import SHAPES
from oracle import assert_runs_same, assert_same
from torch.fx.experimental.proxy_tensor import make_fx

import stitchgen


def _dict_in_dict_out(d, t):
    return {"y": torch.relu(d["x"] * 2) + t[0], "z": (t[1].relu(),)}


def _nested(batch):
    (a, b), rest = batch["pair"], batch["rest"]
    return [a @ b, {"sum": torch.relu(rest["c"]).sum(), "same": rest["c"]}]


def _leaf_out(d):
    return torch.relu(d["x"]) * 3


CASES = {
    "dict-and-tuple": (
        _dict_in_dict_out,
        ({"x": torch.randn(3)}, (torch.randn(3), torch.randn(3))),
    ),
    "nested": (
        _nested,
        ({"pair": (torch.randn(2, 2), torch.randn(2, 2)), "rest": {"c": torch.randn(4)}},),
    ),
    "leaf-output": (_leaf_out, ({"x": torch.randn(5)},)),
}


@pytest.fixture(params=sorted(CASES))
def traced(request):
    return _traced(request.param)


@pytest.mark.parametrize(
    "options",
    [{}, SHAPES["flatten"], {"templates": "vllm"}, {"format": True}],
    ids=["call", "flatten", "vllm", "black"],
)
def test_the_function_takes_and_returns_what_the_graph_does(traced, options):
    gm, inputs = traced
    assert_runs_same(stitchgen.compile(gm, **options), gm, inputs)


def test_boxed_takes_the_original_arguments_in_a_list(traced):
    gm, inputs = traced
    args = list(inputs)
    assert_same(stitchgen.compile(gm, boxed=True)(args), gm(*inputs))
    assert args == []


def test_split_graph_keeps_the_convention(traced):
    gm, inputs = traced
    split = stitchgen.split_graph(gm, ["aten::relu"], strict=False)
    assert_runs_same(split, gm, inputs)
    assert_runs_same(stitchgen.compile(split), gm, inputs)


class _Exported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, pair, *, scale=None, extra=None):
        return {"a": self.lin(x) * scale, "b": [pair[0] + extra["k"], pair[1]]}


def test_torch_export_modules_take_their_keyword_arguments():
    args = (torch.randn(3), (torch.randn(3), torch.randn(3)))
    kwargs = {"scale": torch.randn(3), "extra": {"k": torch.randn(3)}}
    module = torch.export.export(_Exported(), args, kwargs).module()
    expected = module(*args, **kwargs)
    with torch.no_grad():
        fn = stitchgen.compile(module)
        assert_same(fn(*args, **kwargs), expected)
        assert_same(fn(args[0], args[1], scale=kwargs["scale"], extra=kwargs["extra"]), expected)


def test_parameters_named_like_the_flat_inputs_do_not_clash():
    # export names the flat placeholders after the arguments (x -> x): both must stay apart
    module = torch.export.export(_Exported(), (torch.randn(3), (torch.randn(3),) * 2), {
        "scale": torch.randn(3), "extra": {"k": torch.randn(3)},
    }).module()  # fmt: skip
    code = stitchgen.generate(module).code
    assert "def execution_fn(x, pair, scale, extra):" in code


def _traced(name):
    fn, inputs = CASES[name]
    gm = make_fx(fn)(*inputs)
    assert gm.graph._codegen.pytree_info is not None  # the case really is a pytree graph
    return gm, inputs


def test_an_artifact_stores_the_specs_and_loads_in_a_fresh_process(tmp_path):
    """Every case under both conventions, saved here and loaded and run in
    one fresh process (no FX graph, no spec in memory there)."""
    import json
    import subprocess
    import sys

    expected = {}
    for name in sorted(CASES):
        gm, inputs = _traced(name)
        for templates in (None, "vllm"):
            path = stitchgen.generate(gm, templates=templates).save(
                tmp_path / f"{name}-{templates}"
            )
            forms = json.loads((path / "consts.json").read_text())
            assert any(f and "treespec_loads(" in f.get("source", "") for f in forms)
            assert_runs_same(stitchgen.load_artifact(path), gm, inputs)
            torch.save(inputs, path.with_suffix(".inputs.pt"))
            expected[path] = gm(*inputs)
    script = (
        "import sys, torch, stitchgen\n"
        "for path in sys.argv[1:]:\n"
        "    fn = stitchgen.load_artifact(path)\n"
        "    inputs = torch.load(path + '.inputs.pt', weights_only=True)\n"
        "    torch.save(fn(*inputs), path + '.out.pt')\n"
    )
    paths = [str(p) for p in expected]
    subprocess.run([sys.executable, "-c", script, *paths], check=True, timeout=120)
    for path, value in expected.items():
        assert_same(torch.load(f"{path}.out.pt", weights_only=True), value)
