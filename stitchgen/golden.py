"""Golden files: the emitted code for a registry of cases, locked on disk.

The registry is ``tests/golden_cases.py`` (``CASES``: name -> builder) under
a project root; ``golden/<name>.py`` holds the black-formatted code that
``generate`` emits for each case. ``check`` reports drift as unified diffs,
``update`` rewrites the files. ``golden/VERSIONS`` records the black and
torch versions that produced them (black's output drifts between majors).
"""

from __future__ import annotations

import difflib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["case_code", "check", "find_root", "load_cases", "update"]

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


def load_cases(root: Path) -> dict[str, Callable[[str], Any]]:
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
    return dict(module.CASES)


def case_code(build: Callable[[str], Any], device: str = "cpu") -> str:
    """The golden code for one case: ``generate(..., format=True)``."""
    from .generate import generate

    case = build(device)
    return generate(case.gm, opaque=tuple(case.submods), format=True).code


def versions() -> str:
    import black
    import torch

    return f"black=={black.__version__}\ntorch=={torch.__version__.split('+')[0]}\n"


def _golden_dir(root: Path) -> Path:
    return root / "golden"


def check(root: Path, only: list[str] | None = None) -> list[str]:
    """Problems found, each a message (a unified diff for drift); [] if clean."""
    cases = load_cases(root)
    golden = _golden_dir(root)
    problems: list[str] = []
    names = only or sorted(cases)
    for name in names:
        if name not in cases:
            problems.append(f"unknown case {name!r}")
            continue
        path = golden / f"{name}.py"
        actual = case_code(cases[name])
        if not path.is_file():
            problems.append(f"{path}: missing (run `{REGEN}`)")
            continue
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                expected.splitlines(True),
                actual.splitlines(True),
                f"golden/{name}.py",
                f"generated ({name})",
            )
            problems.append("".join(diff) + f"\nto accept: {REGEN} -k {name}")
    if not only:
        for path in sorted(golden.glob("*.py")):
            if path.stem not in cases:
                problems.append(f"{path}: no case of that name (stale; `{REGEN}` removes it)")
    recorded = golden / "VERSIONS"
    if problems and recorded.is_file() and recorded.read_text() != versions():
        problems.append(
            "note: the golden files were produced with\n"
            + recorded.read_text()
            + "and you have\n"
            + versions()
        )
    return problems


def update(root: Path, only: list[str] | None = None) -> list[str]:
    """Rewrite golden files; returns the names whose file changed."""
    cases = load_cases(root)
    golden = _golden_dir(root)
    golden.mkdir(exist_ok=True)
    changed = []
    for name in only or sorted(cases):
        if name not in cases:
            raise KeyError(f"unknown case {name!r}")
        path = golden / f"{name}.py"
        code = case_code(cases[name])
        if not path.is_file() or path.read_text(encoding="utf-8") != code:
            path.write_text(code, encoding="utf-8")
            changed.append(name)
    if not only:
        for path in golden.glob("*.py"):
            if path.stem not in cases:
                path.unlink()
                changed.append(path.stem)
        (golden / "VERSIONS").write_text(versions())
    return changed
