"""Golden files: the emitted code for a registry of cases, locked on disk.

The registry is ``tests/golden_cases.py`` under a project root: ``CASES``
(name -> builder) and ``TEMPLATE_SETS`` (set name -> (templates factory,
case names)). ``golden/<case>.py`` holds the black-formatted code that
``generate`` emits with the built-in templates, ``golden/<set>/<case>.py``
the code with a template set. ``check`` reports drift as unified diffs,
``update`` rewrites the files. ``golden/VERSIONS`` records the black and
torch versions that produced them (black's output drifts between releases).
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Entry", "check", "entries", "find_root", "load_registry", "update"]

REGEN = "stitchgen golden --update"


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` with tests/golden_cases.py."""
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "tests" / "golden_cases.py").is_file():
            return candidate
    raise FileNotFoundError(
        f"no tests/golden_cases.py at or above {here}; run from the project root or pass --root"
    )


def load_registry(root: Path) -> Any:
    """Import ``root/tests/golden_cases.py`` as module ``golden_cases`` (the
    name pytest gives it, so generated code is the same from both)."""
    path = root / "tests" / "golden_cases.py"
    module = sys.modules.get("golden_cases")
    if module is None or Path(getattr(module, "__file__", "")).resolve() != path.resolve():
        spec = importlib.util.spec_from_file_location("golden_cases", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["golden_cases"] = module
        spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Entry:
    """One golden file: ``key`` is ``case`` or ``set/case``."""

    key: str
    build: Callable[[str], Any]
    templates: Callable[[], Any] | None = None

    def path(self, root: Path) -> Path:
        return root / "golden" / f"{self.key}.py"

    def code(self, device: str = "cpu") -> str:
        """The golden code: ``generate(..., format=True)``."""
        from .pipeline import generate

        case = self.build(device)
        templates = self.templates() if self.templates else None
        return generate(case.gm, opaque=tuple(case.submods), templates=templates).code


def entries(root: Path) -> dict[str, Entry]:
    registry = load_registry(root)
    cases = registry.CASES
    out = {name: Entry(name, build) for name, build in sorted(cases.items())}
    for set_name, (factory, names) in sorted(getattr(registry, "TEMPLATE_SETS", {}).items()):
        for name in names:
            key = f"{set_name}/{name}"
            out[key] = Entry(key, cases[name], factory)
    return out


def versions() -> str:
    import black
    import torch

    return f"black=={black.__version__}\ntorch=={torch.__version__.split('+')[0]}\n"


def _selected(all_entries: dict[str, Entry], only: list[str] | None) -> list[Entry]:
    if not only:
        return list(all_entries.values())
    unknown = [key for key in only if key not in all_entries]
    if unknown:
        raise KeyError(f"unknown golden case(s) {unknown}; known: {sorted(all_entries)}")
    return [all_entries[key] for key in only]


def _stale(root: Path, all_entries: dict[str, Entry]) -> list[Path]:
    golden = root / "golden"
    found = sorted(golden.rglob("*.py")) if golden.is_dir() else []
    return [p for p in found if p.relative_to(golden).with_suffix("").as_posix() not in all_entries]


def check(root: Path, only: list[str] | None = None) -> list[str]:
    """Problems found, each a message (a unified diff for drift); [] if clean."""
    all_entries = entries(root)
    problems: list[str] = []
    for entry in _selected(all_entries, only):
        path = entry.path(root)
        actual = entry.code()
        if not path.is_file():
            problems.append(f"{path}: missing (run `{REGEN} -k {entry.key}`)")
            continue
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                expected.splitlines(True),
                actual.splitlines(True),
                f"golden/{entry.key}.py",
                f"generated ({entry.key})",
            )
            problems.append("".join(diff) + f"\nto accept: {REGEN} -k {entry.key}")
    if not only:
        for path in _stale(root, all_entries):
            problems.append(f"{path}: no case of that name (stale; `{REGEN}` removes it)")
    recorded = root / "golden" / "VERSIONS"
    if problems and recorded.is_file() and recorded.read_text() != versions():
        problems.append(
            "note: the golden files were produced with\n"
            + recorded.read_text()
            + "and you have\n"
            + versions()
        )
    return problems


def update(root: Path, only: list[str] | None = None) -> list[str]:
    """Rewrite golden files; returns the keys whose file changed."""
    all_entries = entries(root)
    changed = []
    for entry in _selected(all_entries, only):
        path = entry.path(root)
        code = entry.code()
        if not path.is_file() or path.read_text(encoding="utf-8") != code:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code, encoding="utf-8")
            changed.append(entry.key)
    if not only:
        for path in _stale(root, all_entries):
            path.unlink()
            changed.append(path.name)
        (root / "golden" / "VERSIONS").write_text(versions())
    return changed
