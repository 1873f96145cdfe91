"""The error contract (README, "Errors"): what a user's input gets wrong is a
``StitchgenError`` that names it, keeping the builtin base callers caught
before; stitchgen's own bugs surface as themselves."""

import pytest
import torch.fx as fx

import stitchgen
from stitchgen import ProgramError, StitchgenError, TemplateError, ir
from stitchgen.emitter import Emitter, emit
from stitchgen.errors import TemplateDirError


def _program():
    return stitchgen.lower(fx.symbolic_trace(lambda x: x + 1))


def test_a_template_directory_that_does_not_exist(tmp_path):
    with pytest.raises(
        TemplateDirError, match="template directory .*nope.* does not exist"
    ) as info:
        stitchgen.Templates(tmp_path / "nope")
    assert isinstance(info.value, TemplateError) and isinstance(info.value, FileNotFoundError)
    assert info.value.template == str(tmp_path / "nope")


def test_an_entry_name_that_would_shadow_a_builtin_is_a_program_error():
    with pytest.raises(ProgramError, match="function name 'print' would shadow") as info:
        stitchgen.generate(fx.symbolic_trace(lambda x: x + 1), name="print")
    assert isinstance(info.value, ValueError) and isinstance(info.value, StitchgenError)


def test_the_fast_path_blames_the_template_only_for_a_refused_name():
    fn = ir.Function("f", (ir.Param("x; import os"),), (ir.Return(ir.Name("x")),))
    program = ir.Program("f", "bind", (), (), (), (fn,))
    with pytest.raises(TemplateError, match=r"module.py.j2 \(built-in\): parameter .* is not"):
        emit(program)


def test_a_bug_in_the_fast_path_surfaces_as_itself(monkeypatch):
    def broken(self, *args):
        raise ValueError("a bug of ours")

    monkeypatch.setattr(Emitter, "header", broken)
    with pytest.raises(ValueError, match="a bug of ours") as info:
        emit(_program())
    assert not isinstance(info.value, StitchgenError)


def test_every_public_error_is_a_stitchgen_error_with_a_builtin_base():
    names = [n for n in stitchgen.__all__ if n.endswith("Error")]
    assert {"GoldenError", "ProgramError", "ArtifactError", "TemplateError"} <= set(names)
    for name in names:
        cls = getattr(stitchgen, name)
        assert issubclass(cls, Exception)
        if cls is not StitchgenError:
            assert issubclass(cls, StitchgenError), name
            builtin = [b for b in cls.__mro__ if b.__module__ == "builtins"]
            assert builtin[0] is not Exception, f"{name} keeps no builtin base"
