"""The Jinja environment: built in this one factory, for every ``Templates``.

Imported only when templates other than the built-ins render (the built-ins
take the fast path, ``emitter.py``), so a process that never customizes its
templates never imports Jinja.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from .errors import TemplateError

__all__ = ["build_environment", "template_error"]


class _RawOutput(Exception):
    pass


class _Context(jinja2.runtime.Context):
    """Jinja's context, minus a copy: a scoped block (one per statement here)
    derives a context, and Jinja copies the whole block table each time.
    The table is never changed once rendering runs, so derived contexts share it."""

    def derived(self, locals: dict[str, Any] | None = None) -> jinja2.runtime.Context:
        context = jinja2.runtime.new_context(
            self.environment, self.name, {}, self.get_all(), True, None, locals
        )
        context.eval_ctx = self.eval_ctx
        context.blocks = self.blocks
        return context


def _finalize(value: Any) -> Any:
    """Let through Code and template text (Markup), identifiers and ints."""
    if isinstance(value, Markup):
        return value
    if type(value) is int or type(value) is bool:
        return Markup(value)
    if isinstance(value, str) and value.isascii() and value.isidentifier():
        return Markup(value)
    raise _RawOutput(
        f"the template printed a raw {type(value).__name__} ({str(value)[:40]!r}); "
        "print values through stitchgen's filters (expr, literal, names, comment, ...)"
    )


def build_environment(
    builtin: Path,
    search: Sequence[str],
    filters: Mapping[str, Callable[..., Any]],
    globals: Mapping[str, Any],
) -> jinja2.Environment:
    """An environment searching ``search`` (user and variant directories),
    then the built-ins, which stay reachable as ``"stitchgen/<name>"``."""
    base = jinja2.FileSystemLoader(str(builtin))
    loaders: list[jinja2.BaseLoader] = []
    if search:
        loaders.append(jinja2.FileSystemLoader(list(search)))
    loaders += [jinja2.PrefixLoader({"stitchgen": base}), base]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=True,  # a few stat() calls per render; edited templates are seen
        cache_size=-1,
    )
    env.context_class = _Context
    env.filters.update(filters)
    env.globals.update(globals)
    return env


def template_error(exc: BaseException) -> TemplateError:
    """``exc``, raised while rendering, as a TemplateError naming the file and line."""
    if isinstance(exc, TemplateError):
        return exc
    name = getattr(exc, "filename", None) or getattr(exc, "name", None)
    line = getattr(exc, "lineno", None)
    if name is None or line is None:
        # runtime errors: Jinja rewrites the traceback so template frames
        # carry the template's file and line
        for frame in reversed(traceback.extract_tb(exc.__traceback__)):
            if frame.filename.endswith(".j2"):
                name, line = frame.filename, frame.lineno
                break
    where = f"{name}:{line}" if name else "template"
    kind = "unsafe output" if isinstance(exc, _RawOutput) else type(exc).__name__
    return TemplateError(f"{where}: {kind}: {exc}", template=name, lineno=line)
