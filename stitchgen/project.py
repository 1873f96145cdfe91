"""A project's stitchgen configuration, read by the command line.

``[tool.stitchgen]`` in the nearest ``pyproject.toml`` at or above the
working directory that has that table (found as ruff, black and pytest find
theirs)::

    [tool.stitchgen]
    templates = "myproj.engine:TEMPLATES"  # a Templates, a function returning one, or a DIR
    cases = "tests/golden_cases.py"        # MODULE[:ATTR] or a .py path (ATTR: CASES)
    golden-dir = "golden"                  # where the golden files live

Modules are imported with the folder that holds the ``pyproject.toml`` on
``sys.path``, as pytest's rootdir. ``stitchgen golden`` and ``stitchgen
templates check|diff|lock`` then need no other argument, and they check and
lock with the very object the project's engine renders with: its
directories, variant, filters, globals, names and reserved names.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import StitchgenError, a_or_an

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["KEYS", "Project", "find_project", "load_templates"]

#: the keys of ``[tool.stitchgen]``
KEYS = ("templates", "cases", "golden-dir")


@dataclass(frozen=True)
class Project:
    """``[tool.stitchgen]`` of the ``pyproject.toml`` in ``root`` (a
    ``cases`` path made absolute)."""

    root: Path
    golden_dir: Path
    templates: str | None = None
    cases: str | None = None


def find_project(start: Path | None = None) -> Project | None:
    """The configuration of the nearest ``pyproject.toml`` at or above
    ``start`` (default: the working directory) with a ``[tool.stitchgen]``
    table; None where there is none. A file that is not TOML, or a table
    with an unknown key or a value that is not a string, is a
    :class:`~stitchgen.errors.StitchgenError` naming it."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        path = folder / "pyproject.toml"
        if not path.is_file():
            continue
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise StitchgenError(f"{path}: not TOML ({exc})") from None
        config = table.get("stitchgen") if isinstance(table, dict) else None
        if config is None:
            continue
        where = f"{path} [tool.stitchgen]"
        unknown = sorted(set(config) - set(KEYS)) if isinstance(config, dict) else ["(a value)"]
        if unknown:
            raise StitchgenError(f"{where}: unknown key(s) {unknown}; known: {list(KEYS)}")
        for key, value in config.items():
            if not isinstance(value, str) or not value:
                raise StitchgenError(f"{where}: {key} must be a non-empty string, not {value!r}")
        cases, golden = config.get("cases"), config.get("golden-dir")
        if cases and (cases.partition(":")[0].endswith(".py") or "/" in cases):
            cases = str(folder / cases)  # a path, relative to the project
        return Project(folder, folder / (golden or "golden"), config.get("templates"), cases)
    return None


def load_templates(spec: str, root: Path | None = None) -> Any:
    """The ``Templates`` that ``MODULE:ATTR`` names (``ATTR`` a ``Templates``
    or a function returning one), imported with ``root`` on ``sys.path``;
    or, without a colon, a directory of templates (relative to ``root``).
    Anything else is a :class:`~stitchgen.errors.StitchgenError` naming it."""
    from .rendering import Templates

    module_name, _, attr = spec.partition(":")
    if ":" not in spec:
        directory = (root or Path.cwd()) / spec
        if not directory.is_dir():
            raise StitchgenError(
                f"templates {spec!r}: no directory {directory} (name MODULE:ATTR or a directory)"
            )
        return Templates(str(directory))
    if not module_name or not attr:
        raise StitchgenError(f"templates {spec!r}: name MODULE:ATTR")
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))  # as pytest's rootdir: for the command's whole run
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise StitchgenError(f"templates {spec!r}: no module named {exc.name!r}") from None
        raise StitchgenError(f"templates {spec!r}: importing {module_name} raised {exc!r}") from exc
    except Exception as exc:
        raise StitchgenError(f"templates {spec!r}: importing {module_name} raised {exc!r}") from exc
    if not hasattr(module, attr):
        raise StitchgenError(f"templates {spec!r}: {module_name} has no attribute {attr!r}")
    value = getattr(module, attr)
    if callable(value) and not isinstance(value, Templates):
        try:
            value = value()
        except StitchgenError:
            raise
        except Exception as exc:
            raise StitchgenError(f"templates {spec!r}: {attr}() raised {exc!r}") from exc
    if not isinstance(value, Templates):
        raise StitchgenError(
            f"templates {spec!r}: {attr} is {a_or_an(type(value).__name__)}, not a "
            "stitchgen.Templates (or a function returning one)"
        )
    return value
