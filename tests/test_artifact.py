"""Artifacts: save, verify, load in a fresh process; refuse what is not safe."""

import builtins
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from golden_cases import CASES
from oracle import assert_runs_same, assert_same

import stitchgen
from stitchgen import ArtifactError, BindingError


@pytest.mark.parametrize("name", ["decoder_opaque_pieces", "decoder_1_layer", "get_attr_bindings"])
def test_round_trip(tmp_path, name):
    case = CASES[name]("cpu")
    generated = stitchgen.generate(case.gm, opaque=tuple(case.submods))
    path = generated.save(tmp_path / "artifact")
    submods = {**generated.submods, **case.submods}
    fn = stitchgen.load_artifact(path, submods)
    assert_runs_same(fn, case.reference, case.inputs, case.gm)
    back = stitchgen.read_artifact(path)
    assert back.program == generated.program and back.code == generated.code
    assert back.code_object is not None  # same Python: the stored code object is used


def test_a_fresh_process_loads_and_runs_without_the_graph(tmp_path):
    case = CASES["get_attr_bindings"]("cpu")
    stitchgen.generate(case.gm).save(tmp_path / "artifact")
    torch.save(list(case.inputs), tmp_path / "inputs.pt")
    script = textwrap.dedent(
        f"""
        import torch, stitchgen
        fn = stitchgen.load_artifact({str(tmp_path / "artifact")!r})
        inputs = torch.load({str(tmp_path / "inputs.pt")!r}, weights_only=True)
        torch.save(fn(*inputs), {str(tmp_path / "out.pt")!r})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert_same(torch.load(tmp_path / "out.pt", weights_only=True), case.expected())


def test_bound_pieces_must_be_given_at_load(tmp_path):
    case = CASES["decoder_opaque_pieces"]("cpu")
    path = stitchgen.generate(case.gm, opaque=tuple(case.submods)).save(tmp_path / "a")
    with pytest.raises(BindingError, match=r"missing binding for submodule\(s\) \['submod_0'"):
        stitchgen.load_artifact(path, {})


def test_a_constant_that_cannot_be_stored_safely_is_refused_by_name(tmp_path):
    case = CASES["non_importable_targets"]("cpu")
    generated = stitchgen.generate(case.gm)
    with pytest.raises(ArtifactError, match=r"constant const_local_add \(function .*local_add\)"):
        generated.save(tmp_path / "a")
    assert not (tmp_path / "a").exists()  # nothing half-written


def test_code_from_custom_templates_is_not_stored(tmp_path):
    (tmp_path / "t").mkdir()
    templates = stitchgen.Templates(tmp_path / "t")
    generated = stitchgen.generate(CASES["zero_inputs"]("cpu").gm, templates=templates)
    with pytest.raises(ArtifactError, match="stitchgen's own templates"):
        generated.save(tmp_path / "a")


@pytest.fixture
def saved(tmp_path):
    case = CASES["get_attr_bindings"]("cpu")
    return stitchgen.generate(case.gm).save(tmp_path / "artifact"), case


PAYLOAD = "import builtins\nbuiltins.STITCHGEN_PWNED = True\n"


def test_edited_code_is_refused_before_anything_runs(saved):
    path, _ = saved
    code = path / "code.py"
    code.write_text(PAYLOAD + code.read_text())
    with pytest.raises(ArtifactError, match="code.py does not match its digest"):
        stitchgen.load_artifact(path)
    assert not hasattr(builtins, "STITCHGEN_PWNED")


def test_truncated_and_missing_files_are_refused(saved):
    path, _ = saved
    consts = path / "consts.pt"
    consts.write_bytes(consts.read_bytes()[:10])
    with pytest.raises(ArtifactError, match="consts.pt does not match its digest"):
        stitchgen.load_artifact(path)
    (path / "code.py").unlink()
    with pytest.raises(ArtifactError, match="cannot read code.py"):
        stitchgen.load_artifact(path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="manifest.json is corrupt"):
        stitchgen.load_artifact(path)


def test_version_mismatch_is_refused(saved):
    path, _ = saved
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["versions"]["torch"] = "1.0.0"
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="was made by .*'torch': '1.0.0'.*regenerate"):
        stitchgen.load_artifact(path)
    manifest["version"] = 99
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="format version 99"):
        stitchgen.load_artifact(path)


def test_a_signed_artifact_detects_a_rewritten_digest(tmp_path):
    case = CASES["get_attr_bindings"]("cpu")
    path = stitchgen.generate(case.gm).save(tmp_path / "a", key=b"secret")
    assert_runs_same(
        stitchgen.load_artifact(path, key=b"secret"), case.reference, case.inputs, case.gm
    )
    with pytest.raises(ArtifactError, match="is signed: pass its key"):
        stitchgen.load_artifact(path)
    # an attacker edits the code and recomputes its digest, but cannot sign
    code = path / "code.py"
    code.write_text(PAYLOAD + code.read_text())
    manifest = json.loads((path / "manifest.json").read_text())
    import hashlib

    manifest["digests"]["code.py"] = hashlib.sha256(code.read_bytes()).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match="signature mismatch"):
        stitchgen.load_artifact(path, key=b"secret")
    assert not hasattr(builtins, "STITCHGEN_PWNED")


def test_modules_not_yet_imported_are_not_imported_unless_allowed(saved):
    path, case = saved
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["imports"].append("stitchgen_no_such_module")
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ArtifactError, match=r"imports \['stitchgen_no_such_module'\]"):
        stitchgen.load_artifact(path)


def test_loading_rebuilds_no_fx_graph(saved, monkeypatch):
    path, case = saved

    def forbidden(*args, **kwargs):
        raise AssertionError("an FX graph was built")

    monkeypatch.setattr(torch.fx.Graph, "__init__", forbidden)
    monkeypatch.setattr(torch.fx.GraphModule, "__init__", forbidden)
    assert_runs_same(stitchgen.load_artifact(path), case.reference, case.inputs, case.gm)


def test_save_replaces_an_existing_artifact(tmp_path):
    first = CASES["zero_inputs"]("cpu")
    second = CASES["nested_output"]("cpu")
    path = tmp_path / "a"
    stitchgen.generate(first.gm).save(path)
    stitchgen.generate(second.gm).save(path)
    assert_same(stitchgen.load_artifact(path)(*second.inputs), second.expected())
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["a"]


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_save_onto_a_folder_that_is_not_an_artifact_is_refused_and_keeps_it(tmp_path):
    project = tmp_path / "myproject"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('app')\n")
    (project / "NOTES.txt").write_text("mine\n")
    before = _files(project)
    generated = stitchgen.generate(CASES["zero_inputs"]("cpu").gm)
    with pytest.raises(ArtifactError, match=r"myproject is not a stitchgen artifact .*NOTES.txt"):
        generated.save(project)
    assert _files(project) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["myproject"]  # no staging left


def test_save_onto_a_file_or_a_link_is_refused(tmp_path):
    generated = stitchgen.generate(CASES["zero_inputs"]("cpu").gm)
    (tmp_path / "file").write_text("mine\n")
    with pytest.raises(ArtifactError, match=r"file is a file, not an artifact directory"):
        generated.save(tmp_path / "file")
    assert (tmp_path / "file").read_text() == "mine\n"
    artifact = generated.save(tmp_path / "artifact")
    (tmp_path / "link").symlink_to(artifact, target_is_directory=True)
    with pytest.raises(ArtifactError, match=r"link is a symbolic link"):
        generated.save(tmp_path / "link")


def test_save_onto_an_artifact_holding_a_file_of_the_users_is_refused(tmp_path):
    case = CASES["zero_inputs"]("cpu")
    path = stitchgen.generate(case.gm).save(tmp_path / "a")
    (path / "NOTES.txt").write_text("mine\n")
    before = _files(path)
    with pytest.raises(ArtifactError, match=r"also holds NOTES.txt, which stitchgen did not write"):
        stitchgen.generate(case.gm).save(path)
    assert _files(path) == before


def test_save_onto_an_empty_folder(tmp_path):
    case = CASES["zero_inputs"]("cpu")
    (tmp_path / "empty").mkdir()
    path = stitchgen.generate(case.gm).save(tmp_path / "empty")
    assert_runs_same(stitchgen.load_artifact(path), case.reference, case.inputs, case.gm)


def test_save_under_a_regular_file_is_an_artifact_error_naming_the_path(tmp_path):
    (tmp_path / "afile").write_text("mine")
    generated = stitchgen.generate(CASES["decoder_1_layer"]("cpu").gm)
    with pytest.raises(ArtifactError, match=r"cannot save an artifact at '.*afile/art'.*afile"):
        generated.save(tmp_path / "afile" / "art")
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing left behind
