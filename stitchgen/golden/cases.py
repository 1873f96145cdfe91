"""Golden cases: where they come from (a project's ``MODULE[:ATTR]``) and
what each is (:class:`Entry`: a key, a builder, the directory, the templates)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import GoldenError, StitchgenError, a_or_an
from .files import is_key

__all__ = [
    "Entry",
    "entries_from_cases",
    "load_cases",
    "selected",
]


def _import_file(path: Path) -> Any:
    """The module at ``path``, imported with its folder on ``sys.path`` as
    its tests import it: under its own name (so generated code is the same
    from both), unless a module of that name from another file is loaded."""
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", None) or "").resolve() == path:
            return loaded
        name = f"stitchgen_golden_cases_{name}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)  # no half-imported module left behind
        raise
    finally:
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
        load = lambda: _import_file(path)  # noqa: E731
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
    """A case name is its golden file's path in the directory: ``name`` or
    ``folder/name``, no part empty or starting with a dot."""
    if not isinstance(name, str) or "\0" in name or not is_key(name):
        raise GoldenError(
            f"{where}: case name {name!r} is not a file name (a non-empty string, or "
            "folder/name, no part starting with a dot)"
        )


@dataclass(frozen=True)
class Entry:
    """One golden file, ``<directory>/<key>.py``: ``build()`` gives a
    GraphModule or an object with ``.gm`` and, optionally, ``.submods`` (the
    children kept opaque) and ``.templates`` (its own ``Templates``, over
    ``templates``, the project's)."""

    key: str
    build: Callable[[], Any]
    directory: Path
    templates: Any = None

    @property
    def path(self) -> Path:
        return self.directory / f"{self.key}.py"

    def case(self) -> tuple[Any, tuple[str, ...], Any]:
        """The built case: its GraphModule, its opaque children, and its own
        templates (None where it has none). A builder that raises or returns
        no GraphModule is a :class:`~stitchgen.errors.GoldenError` naming it."""
        import torch.fx as fx

        try:
            case = self.build()
        except Exception as exc:
            raise GoldenError(f"golden case {self.key!r}: its builder raised {_said(exc)}") from exc
        gm = case if isinstance(case, fx.GraphModule) else getattr(case, "gm", None)
        if not isinstance(gm, fx.GraphModule):
            raise GoldenError(
                f"golden case {self.key!r}: its builder returned {a_or_an(type(case).__name__)}, not a "
                "GraphModule (or an object with .gm)"
            )
        opaque = tuple(getattr(case, "submods", None) or ())
        return gm, opaque, getattr(case, "templates", None)

    def code(self, templates: Any = None, case: Any = None) -> str:
        """The golden code, ``generate(..., format=True)``, with ``templates``
        (default: the case's own, else the project's) from ``case`` (default:
        :meth:`case`); a graph stitchgen refuses is a
        :class:`~stitchgen.errors.GoldenError` naming the case."""
        from ..pipeline import generate

        gm, opaque, own = case or self.case()
        try:
            chosen = next((t for t in (templates, own, self.templates) if t is not None), None)
            return generate(gm, opaque=opaque, templates=chosen).code
        except StitchgenError as exc:  # the graph or the templates: the case's input
            raise GoldenError(f"golden case {self.key!r}: {exc}") from exc


def entries_from_cases(
    cases: Mapping[str, Callable[[], Any]], directory: Path, templates: Any = None
) -> dict[str, Entry]:
    """The entries for ``cases`` (functions taking no arguments), written to
    ``directory`` with ``templates`` (a ``Templates``, or None for the built-ins)."""
    return {name: Entry(name, fn, directory, templates) for name, fn in sorted(cases.items())}


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
