"""The package's shape: no function hides a module, imports go one way."""

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import stitchgen

PACKAGE = Path(stitchgen.__file__).parent
MODULES = sorted(
    ["stitchgen"] + [m.name for m in pkgutil.walk_packages(stitchgen.__path__, prefix="stitchgen.")]
)


def _source(name):
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports(name):
    """The stitchgen modules ``name`` imports: top level, inside functions,
    and under ``if TYPE_CHECKING:`` (an annotation is a dependency too)."""
    tree = ast.parse(_source(name).read_text())
    package = name if _source(name).name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # ``from pkg import sub`` imports the module pkg.sub; other names come from pkg
            subs = [f"{module}.{a.name}" for a in node.names]
            targets = [t for t in subs if t in MODULES]
            if len(targets) < len(subs):
                targets.append(module)
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name) for name in MODULES}


def test_every_module_imports_and_no_package_attribute_hides_one():
    for name in MODULES:
        module = importlib.import_module(name)
        parent, _, leaf = name.rpartition(".")
        if parent:
            attribute = getattr(importlib.import_module(parent), leaf)
            assert attribute is module, f"{parent}.{leaf} is {attribute!r}, not the module"


def test_public_names_are_listed_and_real():
    for name in ("stitchgen", "stitchgen.ir", "stitchgen.compat", "stitchgen.passes"):
        module = importlib.import_module(name)
        assert module.__all__, name
        for public in module.__all__:
            assert hasattr(module, public), f"{name}.__all__ lists {public!r}, which is missing"


def test_no_import_cycles():
    state = {}

    def visit(name, path):
        state[name] = "open"
        for other in sorted(GRAPH[name]):
            if state.get(other) == "open":
                cycle = path[path.index(other) :] + [other]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if other not in state:
                visit(other, path + [other])
        state[name] = "done"

    for name in MODULES:
        if name not in state:
            visit(name, [name])


def _reaches(name):
    seen, todo = set(), [name]
    while todo:
        for other in GRAPH[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


#: the layers, lowest first, module by module: a module imports only from
#: its own layer or a lower one, at the top or inside a function. Declared,
#: not computed from the imports (a layering read off them could never fail).
LAYERS = [
    # what everything may use: errors, records, names, files, versions, and
    # stitchgen.runtime (generated code's: it imports torch alone)
    [
        "errors", "records", "identifiers", "layout", "formatting", "atomic", "version",
        "torch_versions", "runtime", "authoring", "authoring.report", "authoring.sources",
        "authoring.preview",
    ],
    ["conventions"],
    # the program, and what a caller asks of every stage (its options)
    ["ir", "ir.serialization", "ir.verifier", "literals", "authoring.typing_ir", "options"],
    # what reads the program: its text, its constants' forms, the passes;
    # an exported program as a graph (its checks made as IR)
    [
        "emitter", "portable", "dump", "template_cache", "passes", "exported",
        "lowering.control", "lowering.pytree",
    ],
    ["filters", "archive"],
    # graph -> program; the code's loading; Jinja's environment; the lock
    ["lowering", "loading", "viewer", "environment", "authoring.lock"],
    ["authoring.analysis"],
    ["authoring.checks", "authoring.catalogue"],
    ["rendering", "split"],
    ["pipeline"],
    # the pipeline's clients
    [
        "compat", "demo", "project", "torch_backend", "golden.files", "golden.writing",
        "golden.version_record", "golden.cases", "authoring.specimens",
    ],
    ["golden", "cli", "pytest_plugin", "vllm_plugin"],
]  # fmt: skip
LAYER = {f"stitchgen.{name}": i for i, names in enumerate(LAYERS) for name in names}
#: the package's lazy ``__getattr__`` door imports every public module on first use
EXEMPT = {"stitchgen"}


def test_every_module_has_a_layer():
    assert sorted(set(MODULES) - EXEMPT - set(LAYER)) == []
    assert sorted(set(LAYER) - set(MODULES)) == []


def test_layers_import_one_way():
    """No module imports from a layer above its own, directly or inside a function."""
    upward = sorted(
        f"{name} (layer {LAYER[name]}) imports {other} (layer {LAYER[other]})"
        for name in sorted(set(MODULES) - EXEMPT)
        for other in GRAPH[name]
        if LAYER[other] > LAYER[name]
    )
    assert not upward, upward


def _imports_torch_fx(name):
    tree = ast.parse(_source(name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.startswith("torch") for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch"):
            return True
    return False


def test_rendering_never_imports_torch():
    for name in sorted(_reaches("stitchgen.rendering") | {"stitchgen.rendering"}):
        assert not _imports_torch_fx(name), f"{name} (reached from rendering) imports torch"


def test_the_graph_is_not_empty():
    assert isinstance(importlib.import_module("stitchgen.pipeline"), types.ModuleType)
    assert "stitchgen.lowering" in GRAPH["stitchgen.pipeline"]
    assert "stitchgen.passes" in GRAPH["stitchgen.pipeline"]


def test_tests_import_no_private_names():
    tests = Path(__file__).parent
    for path in sorted(tests.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stitchgen"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports {private} from {node.module}"
            if isinstance(node, ast.Attribute) and node.attr[:1] == "_" and node.attr[:2] != "__":
                owner = ast.unparse(node.value)
                assert not owner.startswith("stitchgen"), f"{path.name} reads {owner}.{node.attr}"


def test_the_package_says_it_is_typed():
    assert (PACKAGE / "py.typed").is_file()  # PEP 561: mypy reads our hints in your project


def test_one_registry_of_template_variants():
    from stitchgen.emitter import VARIANTS, Emitter
    from stitchgen.rendering import templates_dir

    # one record per shipped set: its name, its emitter
    assert all(v.name == name and issubclass(v.emitter, Emitter) for name, v in VARIANTS.items())
    variants = templates_dir() / "variants"  # the shipped templates, installed or not
    assert {p.name for p in variants.iterdir() if p.is_dir()} == set(VARIANTS)


def test_a_module_past_800_lines_says_why():
    """A module holds one concept; one that runs past about 800 lines says
    why in its docstring ("past 800 lines"), or is opened by concern."""
    long = {}
    for name in MODULES:
        source = _source(name).read_text()
        lines = len(source.splitlines())
        doc = " ".join((ast.get_docstring(ast.parse(source)) or "").split())
        if lines > 800 and "past 800 lines" not in doc:
            long[name] = lines
    assert not long, f"modules past 800 lines that do not say why: {long}"


def test_stitchgen_never_imports_pytest_but_its_plugin():
    """The pytest plugin is pytest's to load (entry point pytest11); no other
    module of the package imports pytest."""
    for name in MODULES:
        if name == "stitchgen.pytest_plugin":
            continue
        tree = ast.parse(_source(name).read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and not node.level
        }
        assert "pytest" not in imported, name


def test_what_generated_code_imports_of_stitchgen_imports_nothing_of_it():
    """``stitchgen.runtime`` loads with an artifact's code: torch alone, no
    other module of the package (nor its lazy door's imports)."""
    assert GRAPH["stitchgen.runtime"] == set()
    assert _imports_torch_fx("stitchgen.runtime")
