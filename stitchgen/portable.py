"""An artifact's constants, stored so that they read back in a fresh process
without unpickling arbitrary classes.

Each lifted constant is stored one of two ways:

* **by a source form** (``consts.json``), when it has one:

  - ``{"name": [module, path]}`` — an object reached by its exact qualified
    name, verified as the generated code's targets are
    (:func:`qualified_name`, as the generated code's targets are: resolving
    the name gives the very object back): dtypes, layouts, memory formats, enum members,
    functions, classes;
  - ``{"source": text, "globals": {name: [module, path]}, "modules": [...]}``
    — an expression: a literal (``...``, ``complex(0.0, -0.0)``), a slice of
    literals (``slice(1, 3, None)``), a pytree ``TreeSpec`` (torch's
    ``treespec_loads`` of its JSON), or an object's
    ``__fx_repr__`` (torch's value-type opaque objects, DTensor placements),
    whose globals are each verified by qualified name. At save the
    expression is evaluated here and must give back an equal object of the
    same type;

* otherwise **in** ``consts.pt`` (``torch.save``, loaded with
  ``weights_only=True``): tensors, devices, sizes and plain data. A constant
  that has no source form and does not round-trip that way is refused at
  save time, naming it.

Reading (:func:`read_consts`) imports the modules of ``torch`` that the forms
name (``torch.distributed.tensor.placement_types`` for a placement); a
module outside torch must already be imported, or be allowed
(``allow_imports``): otherwise the artifact's existing ``ArtifactError``
names it. An expression is checked before it runs: calls, names (its
globals, ``torch`` and ``slice``/``float``/``complex`` only), attributes
(no dunders), literals, and tuple/list/dict displays; it is evaluated
without other builtins.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import sys
import types
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from .errors import ArtifactError, a_or_an
from .identifiers import qualified_name, resolve

__all__ = [
    "PORTABLE_BUILTINS",
    "check_forms",
    "form_modules",
    "missing_modules",
    "qualified_name",
    "read_consts",
    "resolve",
    "source_of",
    "write_consts",
]

#: the builtins a source form may call
PORTABLE_BUILTINS = {"slice": slice, "float": float, "complex": complex}

#: the expression nodes a source form may hold
_NODES = (
    ast.Expression,
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Constant,
    ast.keyword,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.Load,
)

#: a dotted name into torch (compiled on first use: saving only)
_TORCH_NAME = r"\btorch(?:\.[A-Za-z_]\w*)+"


def _is_ref(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def check_forms(forms: Any, count: Any) -> list[Any]:
    """``forms`` (``consts.json`` as read) if it is a list of ``count`` forms
    (or None), each of the shape :func:`write_consts` writes."""
    if not isinstance(forms, list) or len(forms) != count:
        raise ArtifactError("consts.json does not hold the program's constants")
    for form in forms:
        if form is None:
            continue
        if isinstance(form, dict) and form.keys() == {"name"} and _is_ref(form["name"]):
            continue
        if (
            isinstance(form, dict)
            and form.keys() == {"source", "globals", "modules"}
            and isinstance(form["source"], str)
            and isinstance(form["modules"], list)
            and all(isinstance(m, str) for m in form["modules"])
            and isinstance(form["globals"], dict)
            and all(isinstance(k, str) and _is_ref(v) for k, v in form["globals"].items())
        ):
            continue
        raise ArtifactError(f"consts.json holds {form!r}, which is not a constant's form")
    return forms


def source_of(form: dict[str, Any]) -> str:
    """A form as one line of Python (what ``stitchgen show`` prints)."""
    if "name" in form:
        module, path = form["name"]
        return f"{module}.{path}" if path else module
    return str(form["source"])


def _torch_modules(text: str) -> list[str]:
    """The imported modules of torch that ``text`` reaches by attribute
    (``torch.distributed.tensor.placement_types.Shard`` → that module)."""
    found = []
    for match in re.finditer(_TORCH_NAME, text):
        atoms = match.group(0).split(".")
        for end in range(len(atoms), 0, -1):
            module = ".".join(atoms[:end])
            if module in sys.modules:
                found.append(module)
                break
    return found


def form_modules(form: dict[str, Any]) -> list[str]:
    """The modules ``form`` needs imported, in order, once each (an
    expression's were found when it was written: its globals' modules, and
    the modules of torch its text reaches)."""
    if "name" in form:
        return [form["name"][0]]
    return list(form["modules"])


def _expression(text: str, globals: dict[str, list[str]]) -> dict[str, Any]:
    modules = [ref[0] for ref in globals.values()] + _torch_modules(text)
    return {"source": text, "globals": globals, "modules": list(dict.fromkeys(modules))}


def _spec_modules(spec: Any) -> list[str]:
    """The modules defining the node types of a pytree ``spec`` that are not
    Python's own (a model's output class): imported, under the store's
    import rules, before the spec is read back (they register the types)."""
    found: list[str] = []
    todo = [spec]
    while todo:
        node = todo.pop()
        module = getattr(node.type, "__module__", "builtins") if node.type is not None else None
        if module not in (None, "builtins", "collections"):
            found.append(module)
        todo.extend(map(node.child, range(node.num_children)))
    return list(dict.fromkeys(found))


def _form(value: Any) -> dict[str, Any] | None:
    """The source form of ``value``, None if it has none (then it goes to
    ``consts.pt``); an ArtifactError for an ``__fx_repr__`` that cannot be
    written portably."""
    from .literals import is_primitive, literal_source
    from .torch_versions import fx_repr

    if isinstance(value, torch.Tensor):
        return None
    if is_primitive(value):  # Ellipsis, complex: lifted by vLLM's convention
        return _expression(literal_source(value), {})
    ref = qualified_name(value)
    if ref is not None:
        return {"name": list(ref)}
    if isinstance(value, pytree.TreeSpec):  # a pytree graph's specs: torch's own JSON
        try:
            text = pytree.treespec_dumps(value)
        except Exception as exc:
            raise ArtifactError(f"torch cannot write this TreeSpec ({exc})") from None
        loads = f"torch.utils._pytree.treespec_loads({literal_source(text)})"
        form = _expression(loads, {})
        form["modules"] = list(dict.fromkeys([*form["modules"], *_spec_modules(value)]))
        return form
    if type(value) is slice:
        parts = (value.start, value.stop, value.step)
        if all(is_primitive(p) for p in parts):
            return _expression(f"slice({', '.join(literal_source(p) for p in parts)})", {})
        return None
    try:
        written = fx_repr(value)
    except Exception as exc:
        raise ArtifactError(f"its __fx_repr__ failed ({type(exc).__name__}: {exc})") from None
    if written is None:
        return None
    text, names = written
    if not isinstance(text, str) or not isinstance(names, dict):
        raise ArtifactError("its __fx_repr__ does not return (str, dict)")
    refs = {}
    for name, obj in names.items():
        found = qualified_name(obj)
        if found is None:
            raise ArtifactError(
                f"its __fx_repr__ global {name!r} ({obj!r}) has no importable qualified name"
            )
        refs[str(name)] = list(found)
    return _expression(text, refs)


def _checked(text: str, names: Iterable[str]) -> ast.Expression:
    """``text`` parsed, if it is an expression a source form may be: calls,
    its names, attributes without dunders, literals and displays, and every
    ``torch.a.b`` chain reaching torch's own modules, classes or functions
    (never ``torch.os``)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ArtifactError(f"source form {text!r} is not an expression") from None
    allowed = {"torch", *names, *PORTABLE_BUILTINS}
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            raise ArtifactError(f"source form {text!r} holds {a_or_an(type(node).__name__)}")
        if isinstance(node, ast.Name) and node.id not in allowed:
            raise ArtifactError(f"source form {text!r} names {node.id!r}, not one of its globals")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("__"):
                raise ArtifactError(f"source form {text!r} reads {node.attr!r}")
            chain = ast.unparse(node)
            if chain.startswith("torch.") and not _of_torch(chain):
                raise ArtifactError(f"source form {text!r} reaches {chain}, which is not torch's")
    return tree


def _of_torch(chain: str) -> bool:
    """Does ``torch.a.b`` name a module of torch, or a class or function
    that torch defines?"""
    obj: Any = torch
    try:
        for atom in chain.split(".")[1:]:
            obj = getattr(obj, atom)
    except AttributeError:
        return True  # nothing there: evaluating it fails, naming it
    home = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "")
    return isinstance(home, str) and (home == "torch" or home.startswith("torch."))


def _value(form: dict[str, Any]) -> Any:
    """The object a form stands for (its modules imported already)."""
    if "name" in form:
        module, path = form["name"]
        return resolve(module, path)
    names = {name: resolve(*ref) for name, ref in form["globals"].items()}
    tree = _checked(form["source"], names)
    scope = {"__builtins__": dict(PORTABLE_BUILTINS), "torch": torch, **names}
    return eval(compile(tree, "<stitchgen constant>", "eval"), scope)  # noqa: S307  (checked)


def write_consts(values: Sequence[Any], labels: Sequence[str]) -> tuple[bytes, list[Any]]:
    """``consts.pt`` (the constants with no source form; None where a form
    stands) and the forms (None where ``consts.pt`` holds the value) for
    ``values``; ``labels`` name them in errors. Refuses, naming it, a constant
    that cannot be stored either way."""
    stored: list[Any] = []
    forms: list[Any] = []
    for label, value in zip(labels, values, strict=True):
        try:
            form = _form(value)
            if form is not None:
                _round_trip(form, value)
        except ArtifactError as exc:
            raise ArtifactError(f"constant {label} cannot be stored: {exc}") from None
        if form is not None:
            forms.append(form)
            stored.append(None)
            continue
        _weights_only(value, label)
        forms.append(None)
        stored.append(value)
    buffer = io.BytesIO()
    torch.save(stored, buffer)
    return buffer.getvalue(), forms


def _round_trip(form: dict[str, Any], value: Any) -> None:
    missing = [m for m in form_modules(form) if m not in sys.modules]
    if missing:
        raise ArtifactError(f"its source form {source_of(form)!r} needs {missing}")
    try:
        back = _value(form)
    except ArtifactError:
        raise
    except Exception as exc:
        raise ArtifactError(
            f"its source form {source_of(form)!r} fails ({type(exc).__name__}: {exc})"
        ) from None
    from .literals import is_primitive, literal_source

    if "name" in form:
        same = back is value
    elif is_primitive(value):  # nan != nan: compare spellings
        same = type(back) is type(value) and literal_source(back) == literal_source(value)
    else:
        same = type(back) is type(value) and back == value
    if not same:
        raise ArtifactError(f"its source form {source_of(form)!r} does not give it back")


def _weights_only(value: Any, label: str) -> None:
    buffer = io.BytesIO()
    try:
        torch.save(value, buffer)
        buffer.seek(0)
        torch.load(buffer, weights_only=True)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ArtifactError(
            f"constant {label} cannot be stored safely: it has no source form (a verified "
            "qualified name, a slice of literals, an __fx_repr__) and torch.save + "
            f"weights_only load fails ({type(exc).__name__}: {first})"
        ) from None


def missing_modules(forms: Iterable[Any], allow_imports: Iterable[str]) -> list[str]:
    """The modules the forms need that may not be imported: not imported
    yet, not of torch, not allowed."""
    allowed = set(allow_imports)
    needed = [m for form in forms if form is not None for m in form_modules(form)]
    return [
        m
        for m in dict.fromkeys(needed)
        if m not in sys.modules and m not in allowed and m.partition(".")[0] != "torch"
    ]


def read_consts(stored: list[Any], forms: list[Any]) -> list[Any]:
    """The constants: ``stored`` (from ``consts.pt``) with each form's object
    in its place, the modules the forms need imported first (check them with
    :func:`missing_modules` before)."""
    if len(stored) != len(forms):
        raise ArtifactError("consts.pt and consts.json do not hold the same constants")
    out = list(stored)
    for i, form in enumerate(forms):
        if form is None:
            continue
        try:
            for module in form_modules(form):
                importlib.import_module(module)
            out[i] = _value(form)
        except ArtifactError:
            raise
        except Exception as exc:
            raise ArtifactError(
                f"constant {i} ({source_of(form)}) cannot be read back "
                f"({type(exc).__name__}: {exc})"
            ) from None
    return out
