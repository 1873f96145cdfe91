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

``update`` replaces or removes only what it wrote itself. ``DIR/FILES``
records the golden files it wrote; a stale file (one whose case is gone) is
removed only if that record lists it, and a file at a case's path that the
record does not list is replaced only if it already holds exactly the
generated code (it is then recorded), else the whole update is refused,
naming it, before anything is written. ``VERSIONS`` and ``FILES`` are
replaced only when they are stitchgen's own (their first line says so).
Every error about the cases or the directory is a
:class:`~stitchgen.errors.GoldenError`.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import GoldenError, StitchgenError

__all__ = [
    "Entry",
    "check",
    "entries",
    "entries_from_cases",
    "find_root",
    "load_cases",
    "load_registry",
    "selected",
    "update",
    "versions",
    "written",
]

REGEN = "stitchgen golden --update"
VERSIONS = "VERSIONS"
#: the record of the golden files ``update`` wrote into a directory
RECORD = "FILES"
_RECORD_HEADER = (
    "# stitchgen golden: the files `stitchgen golden --update` wrote here "
    "(it replaces or removes no other file)"
)


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

        from .pipeline import generate

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


def _owned_text(path: Path, ours: Callable[[str], bool], what: str) -> str | None:
    """The text of stitchgen's own file ``path``, None if there is none; a
    GoldenError if something else is there."""
    if not os.path.lexists(path):
        return None
    text = None
    if path.is_file() and not path.is_symlink():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = None
    if text is None or not ours(text):
        raise GoldenError(
            f"{path} is not {what} that stitchgen wrote ({_kind(path)}); stitchgen replaces "
            "only its own files there: move it, or choose another --dir"
        )
    return text


def _kind(path: Path) -> str:
    if path.is_symlink():
        return "a symbolic link"
    if path.is_dir():
        return "a directory"
    return "a file of other content"


def written(directory: Path) -> set[str]:
    """The golden files stitchgen recorded writing into ``directory`` (their
    keys: ``case`` or ``set/case``); empty where it keeps no record yet."""
    text = _owned_text(directory / RECORD, lambda t: t.startswith(_RECORD_HEADER), "a record")
    lines = (text or "").splitlines()[1:]
    return {key for key in (line.strip() for line in lines) if _is_key(key)}


def _is_key(key: str) -> bool:
    """A relative path inside the directory, as ``update`` writes them."""
    parts = key.split("/")
    return bool(key) and all(p and not p.startswith(".") and "\\" not in p for p in parts)


def _read_versions(directory: Path) -> str | None:
    return _owned_text(
        directory / VERSIONS, lambda t: t.startswith("stitchgen=="), "a VERSIONS record"
    )


def _state(path: Path, code: str, recorded: bool) -> tuple[str, str]:
    """How the file at a case's ``path`` stands against its ``code``, and its
    text: ``missing``, ``same``, ``drift`` (stitchgen's own file, which
    ``update`` replaces: ``recorded`` in its record) or ``foreign`` (anything
    else there, which ``update`` refuses to replace)."""
    if not os.path.lexists(path):
        return "missing", ""
    if not path.is_file() or path.is_symlink():
        return "foreign", ""
    text = path.read_text(encoding="utf-8", errors="replace")
    if text == code:
        return "same", text
    return ("drift" if recorded else "foreign"), text


def _stale(directory: Path, recorded: set[str], all_entries: dict[str, Entry]) -> list[Path]:
    """The golden files stitchgen wrote whose case is gone (still there)."""
    paths = (directory / f"{key}.py" for key in sorted(recorded - set(all_entries)))
    return [p for p in paths if p.is_file() and not p.is_symlink()]


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
    recorded = _read_versions(directory)
    if recorded is not None and not _holds(recorded):
        return [
            f"{directory / VERSIONS}: version mismatch, not drift: the golden files were made "
            "with\n"
            + _indented(recorded)
            + "and this environment has\n"
            + _indented(_environment())
            + f"install those versions to check them, or regenerate: {regen}"
        ]
    problems: list[str] = []
    recorded_files = written(directory)
    for entry in selected(all_entries, only):
        path = entry.path(root)
        actual = entry.code()
        state, expected = _state(path, actual, entry.key in recorded_files)
        if state == "missing":
            problems.append(f"{path}: missing (run `{regen} -k {entry.key}`)")
        elif state == "foreign":
            problems.append(
                f"{path}: not a golden file stitchgen wrote ({_kind(path)}, not in "
                f"{directory / RECORD}); `{regen}` will not replace it: move it or rename "
                "the case"
            )
        elif state == "drift":
            diff = difflib.unified_diff(
                expected.splitlines(True),
                actual.splitlines(True),
                f"{directory.name}/{entry.key}.py",
                f"generated ({entry.key})",
            )
            problems.append("".join(diff) + f"\nto accept: {regen} -k {entry.key}")
    if not only:
        for path in _stale(directory, recorded_files, all_entries):
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
    """Rewrite golden files; returns the keys whose file changed (a stale
    file removed as ``key (removed)``). Every case is generated and every
    path checked before anything is written: a file stitchgen did not write
    is a :class:`~stitchgen.errors.GoldenError` naming it, and nothing changes."""
    all_entries = entries(root) if all_entries is None else all_entries
    directory = root / "golden" if directory is None else directory
    recorded = written(directory)
    has_versions = _read_versions(directory) is not None  # refuses a VERSIONS not ours
    writes: dict[str, tuple[Path, str]] = {}
    refused: list[str] = []
    for entry in selected(all_entries, only):
        path, code = entry.path(root), entry.code()
        state, _ = _state(path, code, entry.key in recorded)
        if state == "same":
            recorded.add(entry.key)  # ours by content: exactly what stitchgen writes
        elif state == "foreign":
            refused.append(f"{path} ({_kind(path)})")
        else:
            writes[entry.key] = path, code
    if refused:
        raise GoldenError(
            f"not updated: stitchgen did not write {', '.join(refused)} (not in "
            f"{directory / RECORD}) and replaces only its own golden files; move them, rename "
            "those cases, or choose another --dir"
        )
    stale = _stale(directory, recorded, all_entries) if not only else []
    changed = []
    for key, (path, code) in writes.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(code, encoding="utf-8")
        recorded.add(key)
        changed.append(key)
    for path in stale:
        key = path.relative_to(directory).with_suffix("").as_posix()
        path.unlink()
        recorded.discard(key)
        changed.append(f"{key} (removed)")
    directory.mkdir(parents=True, exist_ok=True)
    if not only or not has_versions:
        (directory / VERSIONS).write_text(versions())
    present = sorted(key for key in recorded if (directory / f"{key}.py").is_file())
    (directory / RECORD).write_text("\n".join([_RECORD_HEADER, *present]) + "\n")
    return changed
