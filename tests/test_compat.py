"""stitchgen.compat: vLLM's codegen API, same meanings, same return shapes."""

from pathlib import Path

import black
import pytest
import torch
from builders import vllm_header
from golden_cases import CASES

import stitchgen
from stitchgen.compat import compile_execution_fn, generate_execution_code
from stitchgen.demo import split_decoder
from stitchgen.formatting import black_mode


def _vllm_style(n_layers=2):
    """vLLM binds compiled pieces into split_gm.__dict__, shadowing the children."""
    split_gm, inputs = split_decoder(n_layers)
    expected = split_gm(*inputs)
    compiled = {}
    for name, child in list(split_gm.named_children()):
        compiled[name] = lambda *args, _child=child: _child(*args)
        split_gm.__dict__[name] = compiled[name]
    return split_gm, inputs, expected, compiled


def test_round_trip_through_the_vllm_api():
    split_gm, inputs, expected, compiled = _vllm_style()
    code, submod_names, consts = generate_execution_code(split_gm)
    assert submod_names == [f"submod_{i}" for i in range(5)]
    assert "def execution_fn(" in code and "__vllm_submods__[4](" in code
    fn = compile_execution_fn(code, compiled, submod_names, consts)
    assert torch.equal(fn(*inputs), expected)


def test_inlined_children_and_constants():
    split_gm, inputs = split_decoder(1)  # children are GraphModules: inlined
    code, submod_names, consts = generate_execution_code(split_gm)
    # vLLM lists every child, inlined ones too; the code calls none through a binding
    assert submod_names == ["submod_0", "submod_1", "submod_2"]
    assert "__vllm_inlined_submods__0" in code and "__vllm_submods__[" not in code
    fn = compile_execution_fn(code, {}, submod_names, consts)
    assert torch.equal(fn(*inputs), split_gm(*inputs))


def test_code_cached_by_vllm_before_constants_existed_loads():
    """vLLM-format code as its older codegen wrote it: submod_names lists an
    inlined child too, and there is no consts argument."""
    code = (
        "import torch\nimport operator\n"
        "def __vllm_inlined_submods__0(x):\n"
        "    return (x * 2,)\n"
        "def execution_fn(x, *, __vllm_submods__):\n"
        "    submod_0 = __vllm_inlined_submods__0(x)\n"
        "    getitem = submod_0[0]\n"
        "    submod_1 = __vllm_submods__[1](getitem)\n"
        "    return submod_1\n"
    )
    fn = compile_execution_fn(code, {"submod_1": torch.neg}, ["submod_0", "submod_1"])
    assert torch.equal(fn(torch.ones(2)), torch.full((2,), -2.0))


def test_a_called_piece_without_a_callable_is_an_error_at_load():
    split_gm, _, _, compiled = _vllm_style(1)
    code, submod_names, consts = generate_execution_code(split_gm)
    del compiled["submod_2"]
    with pytest.raises(stitchgen.BindingError, match=r"missing callable\(s\).*\['submod_2'\]"):
        compile_execution_fn(code, compiled, submod_names, consts)


def test_code_from_elsewhere_without_a_callable_fails_at_the_call_naming_the_piece():
    """Code this process did not generate (vLLM's own, or a compile cache's
    in a new process): compat has no linkage for it, and reads none from the
    source; a piece without a callable is named when the code calls it."""
    split_gm, inputs, expected, compiled = _vllm_style(1)
    code, submod_names, consts = generate_execution_code(split_gm)
    elsewhere = code + "# read back from a cache\n"  # another text: not generated here
    assert torch.equal(
        compile_execution_fn(elsewhere, compiled, submod_names, consts)(*inputs), expected
    )
    del compiled["submod_2"]
    fn = compile_execution_fn(elsewhere, compiled, submod_names, consts)  # bound; not called yet
    with pytest.raises(stitchgen.BindingError, match=r"called submodule 'submod_2'.*no callable"):
        fn(*inputs)


def test_the_source_is_emitted_as_a_trace_artifact(monkeypatch):
    seen = []

    def record(name, metadata_fn, payload_fn):
        seen.append((name, metadata_fn(), payload_fn()))

    monkeypatch.setattr(torch._logging, "trace_structured", record)
    split_gm, _, _, compiled = _vllm_style(1)
    code, submod_names, consts = generate_execution_code(split_gm)
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    compile_execution_fn(code, compiled, submod_names, consts)
    assert seen == []  # tracing off: nothing to write, nothing captured
    monkeypatch.setenv("TORCH_TRACE", "/nonexistent/trace")
    compile_execution_fn(code, compiled, submod_names, consts)
    assert seen == [("artifact", {"name": "vllm_execution_code", "encoding": "string"}, code)]


def test_a_slice_reading_graph_values_is_written_not_lifted():
    import torch.fx as fx

    def f(x, n):
        return x[:, 1:n] * 2, x[:, 1:3]

    gm = fx.symbolic_trace(f)
    code, submod_names, consts = generate_execution_code(gm)
    # vLLM lifts every constant slice; the one reading n is an expression
    assert consts == [slice(None), slice(None), slice(1, 3, None)]
    assert "x[__vllm_consts__[0], 1:n]" in code
    fn = compile_execution_fn(code, {}, submod_names, consts)
    x = torch.randn(2, 5)
    for actual, expected in zip(fn(x, 4), f(x, 4), strict=True):
        assert torch.equal(actual, expected)


def test_codegen_writes_vllms_code_with_templates_of_your_own(tmp_path):
    templates = vllm_header(tmp_path, "acme: our templates, vLLM's convention")
    codegen = stitchgen.compat.Codegen([templates])
    split_gm, inputs, expected, compiled = _vllm_style()
    code, submod_names, consts = codegen.generate_execution_code(split_gm)
    assert code.startswith("# acme: our templates, vLLM's convention\n")
    assert (submod_names, consts) == generate_execution_code(split_gm)[1:]
    fn = compile_execution_fn(code, compiled, submod_names, consts)
    assert torch.equal(fn(*inputs), expected)
    piece = split_decoder(1)[0].submod_0
    code, names, _ = codegen.generate_execution_code_with_name(piece, "piece", with_submod=False)
    assert code.startswith("# acme") and "def piece(" in code and names == []


def test_codegen_refuses_a_directory_that_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="template directory .*nope.* does not exist"):
        stitchgen.compat.Codegen([tmp_path / "nope"])


def test_a_split_graph_whose_piece_holds_a_cond_is_its_golden_file_through_compat():
    """vLLM's API on a split graph with a ``cond`` in a piece: the code is
    ``golden/vllm/split_pieces_with_cond.py`` (formatted), the ``cond`` an
    ``if``, and it runs equal to the graph on both branches."""
    case = CASES["split_pieces_with_cond"]("cpu")
    code, submod_names, consts = generate_execution_code(case.gm)
    golden = Path(__file__).resolve().parents[1] / "golden" / "vllm" / "split_pieces_with_cond.py"
    assert black.format_str(code, mode=black_mode()) == golden.read_text()
    assert submod_names == ["submod_0", "submod_1", "submod_2"] and consts == []
    fn = compile_execution_fn(code, {"submod_1": case.gm.submod_1}, submod_names, consts)
    for x in (torch.ones(4), -torch.ones(4)):
        assert torch.equal(fn(x), case.gm(x))
