"""Render a :class:`~stitchgen.ir.Program` to Python source with Jinja2.

Templates place text; Python decides it. Every expression reaches a template
through the ``expr`` filter (and its subscript/arguments siblings), which
writes literals only through :func:`stitchgen.literals.literal_source`.
There is exactly one environment factory, :func:`environment`, cached per
tuple of template directories: user directories are searched first, the
built-in templates last, and the built-ins are also reachable as
``"stitchgen/<name>"`` so an override can ``{% extends %}`` the original.
"""

from __future__ import annotations

import functools
import keyword
import os
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from .errors import TemplateError
from .ir import (
    ConstRef,
    DictExpr,
    FunctionRef,
    GlobalRef,
    ListExpr,
    Literal,
    MethodRef,
    Name,
    Param,
    Program,
    SliceExpr,
    SubmodRef,
    TupleExpr,
)
from .literals import literal_source

__all__ = ["ENTRY_TEMPLATE", "environment", "expr_source", "render", "templates_dir"]

ENTRY_TEMPLATE = "module.py.j2"


def templates_dir() -> Path:
    """The built-in templates: inside the installed package (wheel), or the
    repository's top-level ``templates/`` (source checkout, editable install)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / ENTRY_TEMPLATE).is_file():
            return candidate
    raise FileNotFoundError(f"stitchgen's templates are missing (looked beside {here})")


# --------------------------------------------------------------------------
# expressions — the one place that turns IR values into source text


def _plain_identifier(text: str) -> bool:
    """An ASCII identifier that is not a keyword (non-ASCII identifiers are
    NFKC-normalized by Python, so two spellings could name one attribute)."""
    return text.isascii() and text.isidentifier() and not keyword.iskeyword(text)


def _is_atom(e: Any) -> bool:
    """Can ``e`` be followed by ``[...]``, ``.attr`` or ``(...)`` as written?"""
    return not isinstance(e, (Literal, SliceExpr))


def _atom(e: Any) -> str:
    text = expr_source(e)
    return text if _is_atom(e) else f"({text})"


def _items(items: Sequence[Any]) -> str:
    return ", ".join(expr_source(x) for x in items)


def expr_source(e: Any) -> str:
    """Python source for an IR expression or callee."""
    if isinstance(e, Name):
        return e.id
    if isinstance(e, Literal):
        return literal_source(e.value)
    if isinstance(e, (ConstRef, SubmodRef, FunctionRef)):
        return e.name
    if isinstance(e, GlobalRef):
        if e.module == "builtins":
            return e.path
        return f"{e.module}.{e.path}" if e.path else e.module
    if isinstance(e, TupleExpr):
        if len(e.items) == 1:
            return f"({expr_source(e.items[0])},)"
        return f"({_items(e.items)})"
    if isinstance(e, ListExpr):
        return f"[{_items(e.items)}]"
    if isinstance(e, DictExpr):
        return "{" + ", ".join(f"{expr_source(k)}: {expr_source(v)}" for k, v in e.items) + "}"
    if isinstance(e, SliceExpr):
        return f"slice({_items((e.start, e.stop, e.step))})"
    if isinstance(e, MethodRef):
        if _plain_identifier(e.method):
            return f"{_atom(e.receiver)}.{e.method}"
        return f"getattr({expr_source(e.receiver)}, {literal_source(e.method)})"
    raise TypeError(f"cannot render {type(e).__name__} as an expression")


def _is_none(e: Any) -> bool:
    return isinstance(e, Literal) and e.value is None


def _slice_part(e: Any) -> str:
    return "" if _is_none(e) else expr_source(e)


def _subscript_item(e: Any) -> str:
    if isinstance(e, SliceExpr):
        text = f"{_slice_part(e.start)}:{_slice_part(e.stop)}"
        return text if _is_none(e.step) else f"{text}:{_slice_part(e.step)}"
    return expr_source(e)


def subscript_source(index: Any) -> str:
    """The text between the brackets of ``obj[...]``: slices as ``a:b:c``,
    a tuple of two or more items without parentheses, ``...`` for Ellipsis."""
    if isinstance(index, TupleExpr) and len(index.items) > 1:
        return ", ".join(_subscript_item(x) for x in index.items)
    return _subscript_item(index)


def arguments_source(stmt: Any) -> str:
    """``a, b, k=v`` for a call; keyword names that are not identifiers go
    through ``**{...}`` so they stay data."""
    parts = [expr_source(a) for a in stmt.args]
    odd = []
    for key, value in stmt.kwargs:
        if _plain_identifier(key):
            parts.append(f"{key}={expr_source(value)}")
        else:
            odd.append(f"{literal_source(key)}: {expr_source(value)}")
    if odd:
        parts.append("**{" + ", ".join(odd) + "}")
    return ", ".join(parts)


def params_source(params: Sequence[Param]) -> str:
    out = []
    for p in params:
        text = p.kind + p.name
        if p.default is not None:
            text += "=" + expr_source(p.default)
        out.append(text)
    return ", ".join(out)


def comment_source(text: str) -> str:
    """``text`` made safe for a one-line comment (newlines and controls escaped)."""
    return repr(str(text))[1:-1]


# --------------------------------------------------------------------------
# environment


@functools.lru_cache(maxsize=32)
def environment(template_dirs: tuple[str, ...] = ()) -> jinja2.Environment:
    """The Jinja environment for a tuple of user template directories
    (searched first). Cached: build-once, share-everywhere."""
    for d in template_dirs:
        if not os.path.isdir(d):
            raise FileNotFoundError(f"template directory {d!r} does not exist")
    builtin = jinja2.FileSystemLoader(str(templates_dir()))
    loaders: list[jinja2.BaseLoader] = []
    if template_dirs:
        loaders.append(jinja2.FileSystemLoader(list(template_dirs)))
    loaders += [jinja2.PrefixLoader({"stitchgen": builtin}), builtin]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=True,  # a few stat() calls per render; edited templates are seen
        cache_size=-1,
    )
    env.filters.update(
        expr=expr_source,
        atom=_atom,
        subscript=subscript_source,
        arguments=arguments_source,
        params=params_source,
        comment=comment_source,
    )
    return env


def _normalize_dirs(template_dirs: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    if isinstance(template_dirs, (str, os.PathLike)):
        template_dirs = (template_dirs,)
    return tuple(os.fspath(d) for d in template_dirs)


def _template_error(exc: BaseException) -> TemplateError:
    name = getattr(exc, "filename", None) or getattr(exc, "name", None)
    line = getattr(exc, "lineno", None)
    if name is None or line is None:
        # runtime errors: Jinja rewrites the traceback so template frames
        # carry the template's file and line
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if frame.filename.endswith(".j2") or "templates" in frame.filename:
                name, line = frame.filename, frame.lineno
                break
    where = f"{name}:{line}" if name else "template"
    return TemplateError(f"{where}: {type(exc).__name__}: {exc}", template=name, lineno=line)


def render_source(program: Program, template_dirs: Sequence[str] = ()) -> str:
    """Render without formatting (the compile path)."""
    env = environment(_normalize_dirs(template_dirs))
    try:
        return env.get_template(ENTRY_TEMPLATE).render(program=program)
    except TemplateError:
        raise
    except (jinja2.TemplateError, Exception) as exc:
        raise _template_error(exc) from exc


def render(
    program: Program,
    *,
    format: bool = True,
    template_dirs: Sequence[str | os.PathLike[str]] = (),
) -> str:
    """Python source for ``program``; ``format=True`` runs black on it.

    >>> import torch.fx as fx, stitchgen
    >>> gm = fx.symbolic_trace(lambda x: x + 1)
    >>> print(stitchgen.render(stitchgen.lower(gm), format=False))  # doctest: +ELLIPSIS
    # Generated by stitchgen...
    """
    source = render_source(program, _normalize_dirs(template_dirs))
    if format:
        from .formatting import format_source

        try:
            source = format_source(source)
        except Exception as exc:  # black.InvalidInput and friends
            raise TemplateError(
                f"the rendered source is not valid Python (black: {exc}); "
                "check the templates in use"
            ) from exc
    return source
