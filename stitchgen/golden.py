"""Golden files: the emitted code for a set of cases, locked on disk.

Two ways to name the cases:

* any project: ``stitchgen golden --cases MODULE[:ATTR] --dir DIR`` —
  ``MODULE`` importable (or a ``.py`` path), ``ATTR`` (default ``CASES``) a
  mapping of case names to functions taking no arguments that return a
  ``GraphModule`` (or an object with ``.gm`` and, optionally, ``.submods``:
  the children to keep opaque); ``--template-dir``/``--variant`` choose the
  templates. The files are ``DIR/<case>.py``, black-formatted.
* this repository's registry (the default): ``tests/golden_cases.py`` under
  the project root, with ``CASES`` (name -> builder taking a device) and
  ``TEMPLATE_SETS`` (set name -> (templates factory, case names)):
  ``golden/<case>.py`` and ``golden/<set>/<case>.py``.

``check`` reports drift as unified diffs, each with the command that
regenerates; ``update`` rewrites the files. ``DIR/VERSIONS`` records the
stitchgen and black versions that produced them and the torch releases
stitchgen supports (the files are byte-identical on each); a mismatch — or
a torch outside that range — is reported as such (regenerate, or install
those versions), not as drift.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Entry",
    "check",
    "entries",
    "entries_from_cases",
    "find_root",
    "load_cases",
    "load_registry",
    "update",
    "versions",
]

REGEN = "stitchgen golden --update"
VERSIONS = "VERSIONS"


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
        module = _import_file(path, "golden_cases")
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
    finally:
        if beside:
            sys.path.remove(str(path.parent))
    return module


def load_cases(spec: str) -> Mapping[str, Callable[[], Any]]:
    """The mapping ``MODULE[:ATTR]`` names (``ATTR`` defaults to ``CASES``);
    ``MODULE`` is importable, or a path to a ``.py`` file."""
    module_name, _, attr = spec.partition(":")
    attr = attr or "CASES"
    if module_name.endswith(".py") or "/" in module_name:
        path = Path(module_name).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"--cases {spec}: no file {path}")
        # its own helpers import as they would in its tests
        module = _import_file(path, f"stitchgen_golden_cases_{path.stem}", beside=True)
    else:
        module = importlib.import_module(module_name)
    cases = getattr(module, attr, None)
    if not isinstance(cases, Mapping) or not all(callable(v) for v in cases.values()):
        raise TypeError(
            f"--cases {spec}: {module_name}.{attr} must map case names to functions "
            "returning a GraphModule"
        )
    return cases


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
        """The golden code: ``generate(..., format=True)``."""
        import torch.fx as fx

        from .pipeline import generate

        case = self.build(device)
        gm = case if isinstance(case, fx.GraphModule) else case.gm
        opaque = tuple(getattr(case, "submods", None) or ())
        templates = self.templates() if self.templates else None
        return generate(gm, opaque=opaque, templates=templates).code


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


def versions() -> str:
    """What ``VERSIONS`` records: the stitchgen and black versions, and the
    torch releases stitchgen declares (its ``torch`` requirement: the golden
    files are byte-identical on every one, which its CI matrix proves)."""
    return "\n".join([*_pinned(), _torch_requirement()]) + "\n"


def _pinned() -> list[str]:
    """The lines ``VERSIONS`` holds to exactly: stitchgen's and black's."""
    import black

    from .version import __version__

    return [f"stitchgen=={__version__}", f"black=={black.__version__}"]


def _torch_requirement() -> str:
    """``torch<2.16,>=2.11``: the requirement in stitchgen's own metadata;
    run from a source tree never installed, the running torch exactly."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires("stitchgen") or []
    except PackageNotFoundError:
        declared = []
    for requirement in declared:
        name, _, spec = requirement.partition(";")[0].strip().partition("torch")
        if not name and spec and spec[0] in "<>=!":
            return "torch" + spec.replace(" ", "")
    return f"torch=={_running_torch()}"


def _release(version: str) -> tuple[int, ...]:
    """``(2, 15, 0)`` for ``2.15.0+cu132``: the numeric release alone."""
    parts = []
    for atom in version.split("+")[0].split("."):
        digits = re.match(r"\d+", atom)
        if digits is None:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


_COMPARE: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


def _holds(recorded: str) -> bool:
    """Does this environment meet the ``VERSIONS`` that were recorded? Each
    line as :func:`versions` writes it now, except a torch requirement
    (``torch<2.16,>=2.11``), which the running torch must satisfy
    (``torch==2.13.0``, as older files record it, exactly)."""
    lines = recorded.splitlines()
    if [line for line in lines if not line.startswith("torch")] != _pinned():
        return False
    specs = [line[len("torch") :] for line in lines if line.startswith("torch")]
    if len(specs) != 1:
        return False
    running = _release(_running_torch())
    for clause in specs[0].split(","):
        found = re.fullmatch(r"(>=|<=|==|!=|<|>)(\d+(?:\.\d+)*)", clause)
        if found is None:
            return False
        wanted = _release(found.group(2))
        width = max(len(running), len(wanted))  # 2.16 is 2.16.0
        padded = (running + (0,) * width)[:width], (wanted + (0,) * width)[:width]
        if not _COMPARE[found.group(1)](*padded):
            return False
    return True


def _environment() -> str:
    """The versions this environment has, each exactly."""
    return "\n".join([*_pinned(), f"torch=={_running_torch()}"]) + "\n"


def _running_torch() -> str:
    from .version import torch_version

    return torch_version()


def _selected(all_entries: dict[str, Entry], only: list[str] | None) -> list[Entry]:
    if not only:
        return list(all_entries.values())
    unknown = [key for key in only if key not in all_entries]
    if unknown:
        raise KeyError(f"unknown golden case(s) {unknown}; known: {sorted(all_entries)}")
    return [all_entries[key] for key in only]


def _stale(directory: Path, all_entries: dict[str, Entry]) -> list[Path]:
    found = sorted(directory.rglob("*.py")) if directory.is_dir() else []
    return [
        p for p in found if p.relative_to(directory).with_suffix("").as_posix() not in all_entries
    ]


def check(
    root: Path,
    only: list[str] | None = None,
    *,
    all_entries: dict[str, Entry] | None = None,
    directory: Path | None = None,
    regen: str = REGEN,
) -> list[str]:
    """Problems found, each a message (a unified diff for drift); [] if clean.
    ``all_entries``/``directory`` default to the registry under ``root``."""
    all_entries = entries(root) if all_entries is None else all_entries
    directory = root / "golden" if directory is None else directory
    recorded = directory / VERSIONS
    if recorded.is_file() and not _holds(recorded.read_text()):
        return [
            f"{recorded}: version mismatch, not drift: the golden files were made with\n"
            + _indented(recorded.read_text())
            + "and this environment has\n"
            + _indented(_environment())
            + f"install those versions to check them, or regenerate: {regen}"
        ]
    problems: list[str] = []
    for entry in _selected(all_entries, only):
        path = entry.path(root)
        actual = entry.code()
        if not path.is_file():
            problems.append(f"{path}: missing (run `{regen} -k {entry.key}`)")
            continue
        expected = path.read_text(encoding="utf-8")
        if actual != expected:
            diff = difflib.unified_diff(
                expected.splitlines(True),
                actual.splitlines(True),
                f"{directory.name}/{entry.key}.py",
                f"generated ({entry.key})",
            )
            problems.append("".join(diff) + f"\nto accept: {regen} -k {entry.key}")
    if not only:
        for path in _stale(directory, all_entries):
            problems.append(f"{path}: no case of that name (stale; `{regen}` removes it)")
    return problems


def _indented(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines())


def update(
    root: Path,
    only: list[str] | None = None,
    *,
    all_entries: dict[str, Entry] | None = None,
    directory: Path | None = None,
) -> list[str]:
    """Rewrite golden files; returns the keys whose file changed."""
    all_entries = entries(root) if all_entries is None else all_entries
    directory = root / "golden" if directory is None else directory
    changed = []
    for entry in _selected(all_entries, only):
        path = entry.path(root)
        code = entry.code()
        if not path.is_file() or path.read_text(encoding="utf-8") != code:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code, encoding="utf-8")
            changed.append(entry.key)
    if not only:
        for path in _stale(directory, all_entries):
            path.unlink()
            changed.append(path.name)
    directory.mkdir(parents=True, exist_ok=True)
    if not only or not (directory / VERSIONS).is_file():
        (directory / VERSIONS).write_text(versions())
    return changed
