"""What each entry point imports: ``import stitchgen`` nothing it does not
use (lazy doors), the compile paths no Jinja, black or markupsafe, the warm
path (``load_artifact``) no lowering, passes, rendering or IR. Each case runs
in a fresh process that has imported torch, as a serving process has."""

import json
import os
import subprocess
import sys

import pytest
import torch.fx as fx

import stitchgen

#: the third-party modules whose import we pin (present or absent)
WATCHED = ("jinja2", "black", "markupsafe", "torch.fx.passes.split_module")

COMPILE_PATH = {
    "stitchgen",
    "stitchgen.conventions",
    "stitchgen.emitter",
    "stitchgen.errors",
    "stitchgen.identifiers",
    "stitchgen.ir",
    "stitchgen.literals",
    "stitchgen.loading",
    "stitchgen.lowering",
    "stitchgen.options",
    "stitchgen.passes",
    "stitchgen.pipeline",
    "stitchgen.records",
    "stitchgen.rendering",
}

WARM_PATH = {
    "stitchgen",
    "stitchgen.archive",
    "stitchgen.conventions",
    "stitchgen.errors",
    "stitchgen.identifiers",
    "stitchgen.loading",
    "stitchgen.portable",
    "stitchgen.records",
    "stitchgen.torch_versions",
    "stitchgen.version",
}

GRAPH = "fx.symbolic_trace(lambda x: torch.relu(x) + 1)"

CASES = {
    "import stitchgen": ("import stitchgen", {"stitchgen"}),
    "stitchgen.compile": (
        f"import stitchgen; stitchgen.compile({GRAPH})",
        COMPILE_PATH,
    ),
    "stitchgen.compile, profiled": (
        f"import stitchgen; stitchgen.compile({GRAPH}, templates='profiled', format=True)",
        COMPILE_PATH | {"stitchgen.layout"},  # black's layout: format=True only
    ),
    "stitchgen.compat.generate_execution_code": (
        "from stitchgen.compat import generate_execution_code, compile_execution_fn\n"
        f"code, names, consts = generate_execution_code({GRAPH})\n"
        "compile_execution_fn(code, {}, names, consts)",
        COMPILE_PATH | {"stitchgen.compat"},
    ),
    "stitchgen.load_artifact": (
        "import stitchgen; stitchgen.load_artifact(ARTIFACT)",
        WARM_PATH,
    ),
}


def imported_by(statement, **names):
    """The modules a fresh process (torch imported) imports for ``statement``."""
    script = "\n".join(
        [
            "import json, sys",
            "import torch, torch.fx as fx",
            "before = set(sys.modules)",
            *(f"{key} = {value!r}" for key, value in names.items()),
            statement,
            "print(json.dumps(sorted(set(sys.modules) - before)))",
        ]
    )
    # a user's environment: no checks after each pass (the suite turns them on)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STITCHGEN_")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    generated = stitchgen.generate(fx.symbolic_trace(lambda x: x * 2))
    return str(generated.save(tmp_path_factory.mktemp("warm") / "artifact"))


@pytest.mark.slow
@pytest.mark.parametrize("entry", sorted(CASES))
def test_each_entry_point_imports_what_it_uses_and_no_more(entry, artifact):
    statement, expected = CASES[entry]
    new = imported_by(statement, ARTIFACT=artifact)
    ours = {m for m in new if m == "stitchgen" or m.startswith("stitchgen.")}
    assert ours == expected
    watched = sorted(m for m in WATCHED if m in new)
    assert watched == [], f"{entry} imports {watched}"


def test_every_public_name_resolves_through_its_door():
    for name in stitchgen.__all__:
        value = getattr(stitchgen, name)
        home = getattr(value, "__module__", None) or value.__name__
        assert home.startswith("stitchgen"), (name, home)
    assert set(stitchgen.__all__) <= set(dir(stitchgen))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        stitchgen.nothing_here  # noqa: B018


def test_from_import_works_for_every_public_name():
    namespace: dict = {}
    exec(f"from stitchgen import {', '.join(stitchgen.__all__)}", namespace)
    for name in stitchgen.__all__:
        assert namespace[name] is getattr(stitchgen, name)


#: collections that start inside the body of a module the compile path
#: imports with the collector paused (the importing ``pipeline``/``compat``
#: bodies, which hold the pause, and the package run before it)
COUNT_COLLECTIONS = """
import gc, importlib.util, json, os, sys
import torch, torch.fx
PAUSED_BEFORE = ("__init__.py", "version.py", "compat.py", "pipeline.py")
root = os.path.dirname(importlib.util.find_spec("stitchgen").origin)
seen = []
def count(phase, info):
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "<module>" and code.co_filename.startswith(root + os.sep):
            if os.path.relpath(code.co_filename, root) not in PAUSED_BEFORE:
                seen.append(os.path.relpath(code.co_filename, root))
            return
        frame = frame.f_back
gc.set_threshold(1)  # a collection at nearly every allocation, where enabled
gc.callbacks.append(count)
import stitchgen.compat
gc.callbacks.remove(count)
print(json.dumps({"collections": sorted(set(seen)), "enabled": gc.isenabled()}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("keep", ["", "1"])
def test_the_compile_path_is_imported_with_the_collector_paused(keep):
    """The ~2,700 objects of the compile path's modules are examined once,
    after the import, not in collections during it (see pipeline.paused); the
    collector is on again afterwards, and left alone with STITCHGEN_KEEP_GC=1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STITCHGEN_")}
    env["STITCHGEN_KEEP_GC"] = keep
    out = subprocess.run(
        [sys.executable, "-c", COUNT_COLLECTIONS], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["enabled"]
    if keep:
        assert "ir/__init__.py" in result["collections"]  # the count sees them
    else:
        assert result["collections"] == []
