"""Golden cases: where they come from (a project's ``MODULE[:ATTR]``, or
this repository's registry, ``tests/golden_cases.py``) and what each is
(:class:`Entry`: a key, a builder, the templates, the directory)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GoldenError, StitchgenError

__all__ = [
    "Entry",
    "entries",
    "entries_from_cases",
    "find_root",
    "load_cases",
    "load_registry",
    "selected",
]


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` with tests/golden_cases.py."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "tests" / "golden_cases.py").is_file():
            return candidate
    raise GoldenError(
        f"no tests/golden_cases.py at or above {here}; run from the project root, pass --root, "
        "or name your cases with --cases MODULE[:ATTR] --dir DIR"
    )


def load_registry(root: Path) -> Any:
    """Import ``root/tests/golden_cases.py`` as module ``golden_cases`` (the
    name pytest gives it, so generated code is the same from both)."""
    path = root / "tests" / "golden_cases.py"
    if not path.is_file():
        raise GoldenError(f"{root.resolve()} holds no golden registry (tests/golden_cases.py)")
    module = sys.modules.get("golden_cases")
    if module is None or Path(getattr(module, "__file__", "")).resolve() != path.resolve():
        try:
            module = _import_file(path, "golden_cases")
        except Exception as exc:
            raise GoldenError(f"the golden registry {path} raised {_said(exc)}") from exc
    return module


def _import_file(path: Path, name: str, beside: bool = False) -> Any:
    """The module at ``path``, imported as ``name`` (in ``sys.modules``);
    ``beside`` lets it import the modules next to it while it loads."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if beside:
        sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)  # no half-imported module left behind
        raise
    finally:
        if beside:
            sys.path.remove(str(path.parent))
    return module


def load_cases(spec: str) -> Mapping[str, Callable[[], Any]]:
    """The mapping ``MODULE[:ATTR]`` names (``ATTR`` defaults to ``CASES``);
    ``MODULE`` is importable, or a path to a ``.py`` file. A module that is
    missing or fails to import, a missing attribute, or one that does not map
    case names (each a file name: no path, no leading dot) to functions is a
    :class:`~stitchgen.errors.GoldenError` naming it."""
    module_name, _, attr = spec.partition(":")
    attr = attr or "CASES"
    where = f"--cases {spec}"
    if not module_name:
        raise GoldenError(f"{where}: names no module (MODULE[:ATTR])")
    if module_name.endswith(".py") or "/" in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise GoldenError(f"{where}: no file {path}")
        # its own helpers import as they would in its tests
        load = lambda: _import_file(path, f"stitchgen_golden_cases_{path.stem}", beside=True)  # noqa: E731
    else:
        load = lambda: importlib.import_module(module_name)  # noqa: E731
    try:
        module = load()
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise GoldenError(f"{where}: no module named {exc.name!r}") from exc
        raise GoldenError(f"{where}: importing {module_name} raised {_said(exc)}") from exc
    except Exception as exc:
        raise GoldenError(f"{where}: importing {module_name} raised {_said(exc)}") from exc
    if not hasattr(module, attr):
        raise GoldenError(f"{where}: {module_name} has no attribute {attr!r}")
    cases = getattr(module, attr)
    if not isinstance(cases, Mapping) or not all(callable(v) for v in cases.values()):
        raise GoldenError(
            f"{where}: {attr} in {module_name} is not a mapping of case names to functions "
            f"returning a GraphModule (its type is {type(cases).__name__})"
        )
    for name in cases:
        _check_case_name(name, where)
    return cases


def _said(exc: BaseException) -> str:
    """``ZeroDivisionError: division by zero``"""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _check_case_name(name: object, where: str) -> None:
    """A case name is its golden file's name: no path, no leading dot."""
    if (
        not isinstance(name, str)
        or not name
        or name.startswith(".")
        or any(c in name for c in "/\\\0")
    ):
        raise GoldenError(
            f"{where}: case name {name!r} is not a file name (a non-empty string with no "
            "path separator and no leading dot)"
        )


@dataclass(frozen=True)
class Entry:
    """One golden file: ``key`` is ``case`` or ``set/case``, the file
    ``<directory>/<key>.py``; ``build(device)`` gives a GraphModule or an
    object with ``.gm`` (and ``.submods``, kept opaque)."""

    key: str
    build: Callable[[str], Any]
    templates: Callable[[], Any] | None = None
    directory: Path | None = None

    def path(self, root: Path) -> Path:
        base = self.directory if self.directory is not None else root / "golden"
        return base / f"{self.key}.py"

    def code(self, device: str = "cpu") -> str:
        """The golden code: ``generate(..., format=True)``. A builder that
        raises or returns no GraphModule, and a graph stitchgen refuses, are
        a :class:`~stitchgen.errors.GoldenError` naming the case."""
        import torch.fx as fx

        from ..pipeline import generate

        try:
            case = self.build(device)
        except Exception as exc:
            raise GoldenError(f"golden case {self.key!r}: its builder raised {_said(exc)}") from exc
        gm = case if isinstance(case, fx.GraphModule) else getattr(case, "gm", None)
        if not isinstance(gm, fx.GraphModule):
            raise GoldenError(
                f"golden case {self.key!r}: its builder returned a {type(case).__name__}, not a "
                "GraphModule (or an object with .gm)"
            )
        opaque = tuple(getattr(case, "submods", None) or ())
        try:
            templates = self.templates() if self.templates else None
            return generate(gm, opaque=opaque, templates=templates).code
        except StitchgenError as exc:  # the graph or the templates: the case's input
            raise GoldenError(f"golden case {self.key!r}: {exc}") from exc


def entries_from_cases(
    cases: Mapping[str, Callable[[], Any]], directory: Path, templates: Any = None
) -> dict[str, Entry]:
    """The entries for ``cases`` (functions taking no arguments), written to
    ``directory`` with ``templates`` (a ``Templates``, or None for the built-ins)."""
    factory: Callable[[], Any] | None = None
    if templates is not None:

        def factory() -> Any:
            return templates

    return {
        name: Entry(name, _ignoring_device(fn), factory, directory)
        for name, fn in sorted(cases.items())
    }


def _ignoring_device(fn: Callable[[], Any]) -> Callable[[str], Any]:
    def build(device: str) -> Any:
        return fn()

    return build


def entries(root: Path) -> dict[str, Entry]:
    registry = load_registry(root)
    cases = registry.CASES
    out = {name: Entry(name, build) for name, build in sorted(cases.items())}
    for set_name, (factory, names) in sorted(getattr(registry, "TEMPLATE_SETS", {}).items()):
        for name in names:
            key = f"{set_name}/{name}"
            out[key] = Entry(key, cases[name], factory)
    return out


def selected(all_entries: dict[str, Entry], only: list[str] | None) -> list[Entry]:
    """The entries ``only`` names (all of them when it is empty); an unknown
    name is a :class:`~stitchgen.errors.GoldenError` listing the known ones."""
    if not only:
        return list(all_entries.values())
    unknown = [key for key in only if key not in all_entries]
    if unknown:
        known = ", ".join(sorted(all_entries)) or "none"
        raise GoldenError(f"unknown golden case(s) {', '.join(unknown)}; known: {known}")
    return [all_entries[key] for key in only]
