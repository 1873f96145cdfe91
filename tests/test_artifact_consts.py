"""Every constant the conventions bind or lift survives save -> load_artifact
in a fresh process that imported only stitchgen and the user's own modules,
and nothing but tensors and plain data is unpickled."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.fx as fx
from opaque_types import Cache, LayerName, Mode
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard
from torch.fx._lazy_graph_module import _make_graph_module, _use_lazy_graph_module

import stitchgen
from stitchgen import ArtifactError, CodegenError
from stitchgen.archive import digest
from stitchgen.portable import source_of
from stitchgen.viewer import describe_artifact

TESTS = str(Path(__file__).parent)

#: constants real graphs carry (a Llama graph: slices, memory formats; vLLM:
#: layer names; DTensor: placements), one of each
CONSTANTS = [
    Mode.DECODE,
    torch.strided,
    torch.Size([2, 3]),
    torch.device("cpu"),
    torch.float16,
    torch.channels_last,
    slice(None, 2, None),
    Ellipsis,
    complex(1.5, -2.0),
    Shard(0),
    Replicate(),
    Partial(),
    LayerName("model.layers.0.self_attn"),
]


def _graph():
    graph = fx.Graph()
    x = graph.placeholder("x")
    sliced = graph.call_function(
        torch.ops.aten.clone.default, (x,), {"memory_format": torch.contiguous_format}
    )
    part = graph.call_function(__import__("operator").getitem, (sliced, slice(1, 3)))
    graph.output((part, *CONSTANTS))
    return _module(graph)


def _module(graph):
    with _use_lazy_graph_module(True):  # FX's own codegen cannot spell every constant
        return _make_graph_module({}, graph)


def _run_fresh(script):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )


def test_every_constant_survives_a_fresh_process(tmp_path):
    """Under both conventions, loaded and run in one fresh process."""
    gm = _graph()
    # the oracle (FX stores a Size as a tuple; torch < 2.12's FX code cannot
    # spell an enum member, so the graph is interpreted, not run as code)
    expected = fx.Interpreter(gm).run(torch.arange(5.0))
    paths = []
    for templates in (None, "vllm"):
        generated = stitchgen.generate(gm, templates=templates)
        assert any(isinstance(v, LayerName) for v in generated.consts)  # lifted, not written
        path = generated.save(tmp_path / f"artifact-{templates}")
        here = stitchgen.load_artifact(path)(torch.arange(5.0))
        assert repr(here[1:]) == repr(expected[1:])
        paths.append(str(path))
    child = _run_fresh(
        f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        import torch, stitchgen, opaque_types  # the user's own module
        assert "torch.distributed.tensor" not in sys.modules  # load_artifact imports it
        for path in {paths!r}:
            out = stitchgen.load_artifact(path)(torch.arange(5.0))
            print(out[0].tolist())
            print(repr(out[1:]))
            print([type(v).__qualname__ for v in out[1:]])
        """
    )
    assert child.returncode == 0, child.stderr
    lines = child.stdout.splitlines()
    assert len(lines) == 6, child.stdout
    for first in (0, 3):
        assert lines[first] == "[1.0, 2.0]"
        assert lines[first + 1] == repr(expected[1:])
        assert lines[first + 2] == repr([type(v).__qualname__ for v in expected[1:]])


def test_forms_are_written_for_what_pickle_cannot_carry(tmp_path):
    path = stitchgen.generate(_graph(), templates="vllm").save(tmp_path / "a")
    forms = json.loads((path / "consts.json").read_text())
    shown = [source_of(f) if f else None for f in forms]
    assert "opaque_types.Mode.DECODE" in shown
    assert "torch.channels_last" in shown
    assert "slice(None, 2, None)" in shown
    assert "torch.distributed.tensor.placement_types.Shard(dim=0)" in shown
    assert "LayerName('model.layers.0.self_attn')" in shown
    assert None in shown  # torch.Size and devices stay in consts.pt (weights-only)
    report, ok = describe_artifact(path)
    assert ok
    assert "(read back as torch.distributed.tensor.placement_types.Replicate())" in report
    assert "(read back as LayerName('model.layers.0.self_attn'))" in report


def test_a_user_module_not_imported_is_named_at_load(tmp_path):
    path = stitchgen.generate(_graph(), templates="vllm").save(tmp_path / "a")
    child = _run_fresh(
        f"""
        import torch, stitchgen
        try:
            stitchgen.load_artifact({str(path)!r})
        except stitchgen.ArtifactError as exc:
            print(exc)
        """
    )
    assert "imports ['opaque_types'], not imported in this process" in child.stdout, child.stderr


def test_a_reference_type_opaque_object_is_no_constant():
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output((graph.call_function(torch.ops.aten.clone.default, (x,)), Cache()))
    gm = _module(graph)
    for templates in (None, "vllm"):
        with pytest.raises(CodegenError, match="reference-type opaque object.*graph input"):
            stitchgen.generate(gm, templates=templates)


def _rewrite_forms(path, forms):
    data = json.dumps(forms).encode()
    (path / "consts.json").write_bytes(data)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["digests"]["consts.json"] = digest(data)
    (path / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    "form,message",
    [
        ({"source": "__import__('os')", "globals": {}, "modules": []}, "names '__import__'"),
        ({"source": "torch.__class__", "globals": {}, "modules": []}, "reads '__class__'"),
        ({"source": "[x for x in ()]", "globals": {}, "modules": []}, "holds a ListComp"),
        ({"source": "torch.os.getcwd()", "globals": {}, "modules": []}, "getcwd, which is not"),
        ({"pickle": "..."}, "not a constant's form"),
    ],
)
def test_a_form_is_checked_before_it_runs(tmp_path, form, message):
    path = stitchgen.generate(_graph(), templates="vllm").save(tmp_path / "a")
    forms = json.loads((path / "consts.json").read_text())
    forms[0] = form
    _rewrite_forms(path, forms)
    with pytest.raises(ArtifactError, match=message):
        stitchgen.load_artifact(path)


def test_a_form_that_does_not_give_the_constant_back_is_refused(tmp_path):
    class Liar:
        def __eq__(self, other):
            return False

        __hash__ = object.__hash__

        def __fx_repr__(self):
            return "slice(None)", {}

    graph = fx.Graph()
    graph.output((graph.call_function(torch.ones, (2,)), Liar()))
    generated = stitchgen.generate(_module(graph), templates="vllm")
    with pytest.raises(ArtifactError, match=r"source form 'slice\(None\)' does not give it back"):
        generated.save(tmp_path / "a")
    assert not (tmp_path / "a").exists()
