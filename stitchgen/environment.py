"""The Jinja environment: built in this one factory, for every ``Templates``.

Imported only when templates other than the built-ins render (the built-ins
take the fast path, ``emitter.py``), so a process that never customizes its
templates never imports Jinja.

Safety. Template text is code; values from the graph (string constants,
node names, descriptions) are data, and the only way to print data is through
stitchgen's filters, which return :class:`~stitchgen.filters.Code`.
Jinja's autoescape marks text "safe" with ``Markup`` — an HTML taint, not
ours: ``e``, ``safe``, ``urlize``, ``join``, ``Markup + str``, ``~`` would all
turn a string into "safe" text, and printed "safe" text is code. So:

* ``finalize`` prints ``Markup`` (our ``Code`` and the templates' own output:
  blocks, ``super()``, macros), ints and bools, and a plain string only if it
  is one of the program's own names (a function, parameter, target or
  binding); anything else is refused;
* every filter of the environment that is not ours is guarded: it may return
  ``Markup`` only if that is one of its inputs, or if every text it was given
  is already ``Markup`` (whitespace and commas excepted) — so ``"x" | e`` and
  ``code | replace("a", data)`` are refused, ``code | indent(4)`` is not;
* ``+`` and ``%`` between ``Markup`` and a plain string, ``~`` mixing them,
  and any attribute of a ``Markup`` (``.join``, ``.format``, ``.__class__``)
  are refused (a sandboxed environment, which also hides ``_`` attributes).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import jinja2.compiler
import jinja2.nodes
import jinja2.runtime
import jinja2.sandbox
from markupsafe import Markup

from .emitter import INDENT
from .errors import TemplateError
from .filters import BlockText
from .ir import CLASSES, Program, Unbox

__all__ = [
    "Recording",
    "build_environment",
    "closest",
    "no_attribute",
    "public_attributes",
    "source_error",
    "template_error",
    "written_by",
]

#: the key under which a render passes the program's names to ``finalize``
NAMES_KEY = "stitchgen_names"


class _RawOutput(Exception):
    pass


class _Unsafe(jinja2.sandbox.SecurityError):
    pass


_CONTEXTS = (jinja2.runtime.Context, jinja2.nodes.EvalContext, jinja2.Environment)
#: the IR's classes (its registry): their public fields and methods are the template contract
_IR_TYPES = frozenset(CLASSES.values())
#: the objects whose attributes templates read directly: the IR and ``emit``
_TYPED = _IR_TYPES | {BlockText}


def _harmless_text(value: str) -> bool:
    return value.strip(" \t\n,") == ""


def _code_only(value: Any) -> bool:
    """Is ``value`` made only of code (Markup), numbers, None and harmless
    text (whitespace, commas), through lists, tuples and dicts?"""
    if isinstance(value, Markup):
        return True
    if isinstance(value, str):
        return _harmless_text(value)
    if value is None or type(value) in (int, float, bool):
        return True
    if isinstance(value, (list, tuple)):
        return all(_code_only(x) for x in value)
    if isinstance(value, dict):
        return all(_code_only(k) and _code_only(v) for k, v in value.items())
    return isinstance(value, _CONTEXTS)


def _passed_through(out: Markup, args: Sequence[Any], kwargs: Mapping[str, Any]) -> bool:
    """Is ``out`` one of the inputs, or an item of one (``first``, ``default``)?"""
    for value in (*args, *kwargs.values()):
        if value is out:
            return True
        if isinstance(value, (list, tuple)) and any(x is out for x in value):
            return True
    return False


def _guard(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a Jinja filter) refused where it would turn text into code."""

    @functools.wraps(fn)  # keeps jinja_pass_arg (pass_context & co.)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        # an iterator can be read once: read it here, so the check sees what the filter sees
        args = tuple(list(a) if isinstance(a, Iterator) else a for a in args)
        out = fn(*args, **kwargs)
        if isinstance(out, Markup) and not _passed_through(out, args, kwargs):
            if not all(_code_only(a) for a in (*args, *kwargs.values())):
                raise _Unsafe(
                    f"filter {name!r} would turn text into code; print values through "
                    "stitchgen's filters (expr, literal, names, comment, ...)"
                )
        return out

    return guarded


def _defined(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """Raise the error of the first undefined value among the arguments
    (a StrictUndefined raises its own message when printed)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, jinja2.StrictUndefined):
            str(value)


def _strict(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a filter of stitchgen's or the user's), refusing an undefined
    argument with its own message (the attribute that is missing, and the
    closest ones) instead of the filter's error about its type."""

    @functools.wraps(fn)  # keeps jinja_pass_arg (pass_context & co.)
    def strict(*args: Any, **kwargs: Any) -> Any:
        _defined(args, kwargs)
        return fn(*args, **kwargs)

    return strict


def _mixes(left: Any, right: Any) -> bool:
    """Code on one side, text that is not code on the other."""
    if isinstance(left, Markup):
        return not _code_only(right)
    if isinstance(right, Markup):
        return not _code_only(left)
    return False


class _Generator(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, with ``~`` checked like ``+``."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Any) -> None:
        self.write("environment.stitchgen_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Environment(jinja2.sandbox.SandboxedEnvironment):
    code_generator_class = _Generator
    intercepted_binops = frozenset({"+", "%"})

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) in _TYPED and attribute[:1] != "_":  # the common case, quickly
            try:
                return getattr(obj, attribute)
            except AttributeError:
                # "'Call' has no attribute 'nde' (did you mean 'node'?)", raised where it is used
                return self.undefined(no_attribute([type(obj)], attribute), obj, attribute)
        return super().getattr(obj, attribute)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        if type(getattr(__obj, "__self__", None)) is BlockText:
            _defined(args, kwargs)  # emit.x(stmt.nde) names the attribute, not the type
        return super().call(__context, __obj, *args, **kwargs)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, Markup):
            return False  # .join/.format/.replace would put text into code
        return super().is_safe_attribute(obj, attr, value)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        return self.undefined(
            f"attribute {attribute!r} of {type(obj).__name__} is not available in "
            "stitchgen templates (code has no methods; names with '_' are private)",
            name=attribute,
            obj=obj,
            exc=_Unsafe,
        )

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if _mixes(left, right):
            raise _Unsafe(
                f"{operator!r} between code and text would turn the text into code; "
                "print values through stitchgen's filters"
            )
        return super().call_binop(context, operator, left, right)

    def stitchgen_concat(self, values: Sequence[Any]) -> Any:
        if any(isinstance(v, Markup) for v in values) and not all(_code_only(v) for v in values):
            raise _Unsafe(
                "'~' between code and text would turn the text into code; "
                "print values through stitchgen's filters"
            )
        return jinja2.runtime.markup_join(values)


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


@jinja2.pass_context
def _finalize(context: jinja2.runtime.Context, value: Any) -> Any:
    """Let through Code and template text (Markup), ints, and the program's names."""
    if isinstance(value, Markup):
        return value
    if type(value) is int or type(value) is bool:
        return Markup(value)
    if isinstance(value, str) and value in context.get(NAMES_KEY, ()):
        return Markup(value)
    raise _RawOutput(
        f"the template printed a raw {type(value).__name__} ({str(value)[:40]!r}); "
        "print values through stitchgen's filters (expr, literal, names, comment, ...)"
    )


def _statements_text(context: jinja2.runtime.Context, body: Sequence[Any]) -> str:
    """Each statement of ``body`` through the block named for its kind
    (``stmt.template``; ``statement`` where there is none, or for an
    ``Unbox``, which only opens a function), between ``before_<kind>`` and
    ``after_<kind>`` where those are defined, each seeing ``stmt``."""
    blocks = context.blocks
    out: list[str] = []
    for stmt in body:
        name = getattr(type(stmt), "template", None)
        if not isinstance(name, str) or name not in blocks or type(stmt) is Unbox:
            name = "statement"
        scope = context.derived({"stmt": stmt})
        for part in (f"before_{name}", name, f"after_{name}"):
            found = blocks.get(part)
            if found:
                out.extend(found[0](scope))
    return jinja2.utils.concat(out)


@jinja2.pass_context
def statements(context: jinja2.runtime.Context, body: Sequence[Any]) -> Markup:
    """The template global ``statements(fn.statements)``: a body, each
    statement written by its block at the blocks' own indentation. While it
    renders, a body the emitter writes (``emit.if_``, a kind of yours
    through ``emit.statement``) comes back through the blocks too
    (:attr:`~stitchgen.emitter.Emitter.through`): one recursive entry."""
    emit = context.get("emit")
    emitter = getattr(emit, "_emitter", None)
    if emitter is None:
        return Markup(_statements_text(context, body))

    def through(inner: Sequence[Any], indent: str) -> str:
        if not inner:
            return f"{indent}pass\n"
        text = _statements_text(context, inner)  # (written at INDENT)
        deeper = indent[len(INDENT) :]
        return "".join(deeper + s if s.strip() else s for s in text.splitlines(True))

    saved, emitter.through = emitter.through, through
    try:
        return Markup(_statements_text(context, body))
    finally:
        emitter.through = saved


@jinja2.pass_context
def nested(context: jinja2.runtime.Context, body: Sequence[Any]) -> Markup:
    """The template global ``nested(stmt.body)``: a statement's own body,
    one level in (``pass`` for an empty one): each statement by its block,
    as ``statements`` writes it, indented by the engine."""
    if not body:
        return Markup(f"{INDENT}{INDENT}pass\n")
    text = _statements_text(context, body)
    return Markup("".join(INDENT + s if s.strip() else s for s in text.splitlines(True)))


#: the template globals that render statements through the blocks
STATEMENT_GLOBALS = {"statements": statements, "nested": nested}


def build_environment(
    builtin: Path,
    search: Sequence[str],
    filters: Mapping[str, Callable[..., Any]],
    globals: Mapping[str, Any],
    bytecode_cache: jinja2.BytecodeCache | None = None,
    variants: Mapping[str, str] | None = None,
) -> jinja2.Environment:
    """An environment searching ``search`` (user and variant directories),
    then the built-ins, which stay reachable as ``"stitchgen/<name>"``, as
    the folders of ``variants`` of yours (by name) are as
    ``"stitchgen/variants/<name>/..."``; ``bytecode_cache`` keeps the
    compiled templates across processes (:mod:`stitchgen.template_cache`)."""
    base: jinja2.BaseLoader = jinja2.FileSystemLoader(str(builtin))
    loaders: list[jinja2.BaseLoader] = []
    if search:
        loaders.append(jinja2.FileSystemLoader(list(search)))
    own = {name: jinja2.FileSystemLoader(folder) for name, folder in (variants or {}).items()}
    yours = jinja2.PrefixLoader({"variants": jinja2.PrefixLoader(own)})  # no variants: finds none
    loaders += [jinja2.PrefixLoader({"stitchgen": jinja2.ChoiceLoader([yours, base])}), base]
    env = _Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=True,  # a few stat() calls per render; edited templates are seen
        cache_size=-1,
        bytecode_cache=bytecode_cache,
    )
    env.context_class = _Context
    for name, fn in list(env.filters.items()):
        env.filters[name] = _guard(name, fn)
    env.filters.update({name: _strict(fn) for name, fn in filters.items()})
    env.globals.update(STATEMENT_GLOBALS)
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
    unsafe = isinstance(exc, (_RawOutput, _Unsafe))
    kind = "unsafe output" if unsafe else type(exc).__name__
    return TemplateError(f"{where}: {kind}: {exc}", template=name, lineno=line)


def source_error(
    templates: Any,
    source: str,
    error: SyntaxError | None = None,
    program: Program | None = None,
    detail: str = "",
) -> TemplateError:
    """The error for rendered ``source`` that is not Python (``templates``:
    the :class:`~stitchgen.rendering.Templates` that rendered it): the line of your
    templates that wrote the bad line (or the one before it), where a render
    of ``program`` can tell (:func:`written_by`); else the templates in use;
    then the generated lines around the line ``error`` names."""
    lineno = (error.lineno or 0) if error is not None else 0
    if error is not None:
        detail = f": {error.msg} at line {error.lineno}"
    lines = source.splitlines()
    template, line, where = templates.describe(), None, ""
    if program is not None and 0 < lineno <= len(lines) and not templates.builtin_in_effect:
        wanted = [t.strip() for t in lines[max(lineno - 2, 0) : lineno] if t.strip()]
        for file, at, text in reversed(_written(templates, program)):
            matched = [t.strip() for t in text.splitlines() if t.strip() in wanted]
            if matched:
                at = _literal_line(file, at, matched[-1])
                template, line, where = file, at, f" (written by {file}:{at})"
                break
    shown = "".join(
        f"\n  {'>' if n == lineno else ' '} {n:4} | {lines[n - 1]}"
        for n in range(max(lineno - 2, 1), min(lineno + 2, len(lines)) + 1)
    )
    prefix = f"{template}:{line}" if line else template
    return TemplateError(
        f"{prefix}: the rendered source is not valid Python{detail}{where}; check the "
        f"templates in use{shown}",
        template=template,
        lineno=line,
    )


def _written(templates: Any, program: Program) -> list[tuple[str, int, str]]:
    """What each line of your templates wrote for ``program`` (on an
    environment of its own); nothing where the render itself fails."""

    def render(env: Any) -> str:
        shipped = templates._shipped("function.py.j2")
        return templates.through_jinja(program, shipped_function=shipped, env=env)

    try:
        return written_by(templates._build(), templates.dirs, render)
    except Exception:  # the render itself fails: nothing to name
        return []


def _literal_line(file: str, at: int, text: str) -> int:
    """The line of ``file``, from ``at`` on, that holds ``text`` as it is
    (Jinja maps a run of template text to the line it starts on); else ``at``."""
    try:
        lines = Path(file).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return at
    return next((n for n in range(at, len(lines) + 1) if lines[n - 1].strip() == text), at)


def written_by(
    env: jinja2.Environment, dirs: Sequence[str], render: Callable[[jinja2.Environment], str]
) -> list[tuple[str, int, str]]:
    """Which line of your templates (the files under ``dirs``) wrote what:
    ``render(env)`` runs once with every block of theirs (and each one's
    top level) recording the text it writes as ``(file, line, text)``, the
    line from Jinja's map of its compiled code back to the template, as
    FX maps generated lines to nodes. ``env`` must be a fresh environment:
    its templates are changed."""
    import inspect

    found: list[tuple[str, int, str]] = []

    def record(template: jinja2.Template, gen: Any, chunk: str) -> None:
        inner = gen
        while inspect.isgenerator(getattr(inner, "gi_yieldfrom", None)):
            inner = inner.gi_yieldfrom
        frame = inner.gi_frame
        if frame is not None and frame.f_code.co_filename == template.filename:
            line = template.get_corresponding_lineno(frame.f_lineno)
            found.append((template.filename or "", line, chunk))

    def recording(fn: Callable[..., Any], template: jinja2.Template) -> Recording:
        return Recording(fn, lambda gen, chunk: record(template, gen, chunk))

    for directory in dirs:
        for path in sorted(Path(directory).rglob("*.j2")):
            try:
                template = env.get_template(path.relative_to(directory).as_posix())
            except jinja2.TemplateError:
                continue
            if template.filename is None or not os.path.samefile(template.filename, path):
                continue  # a file an earlier directory overrides
            for name, fn in list(template.blocks.items()):
                template.blocks[name] = recording(fn, template)
            template.root_render_func = recording(template.root_render_func, template)
    render(env)
    return found


class Recording:
    """A template's render function (a block's, or its top level's) that
    hands ``seen(generator, chunk)`` each chunk it writes. It equals the
    function it wraps, as Jinja's ``super()`` finds the calling block by
    equality in the context's list of blocks."""

    def __init__(self, fn: Callable[..., Any], seen: Callable[[Any, str], None]) -> None:
        self.fn, self.seen = fn, seen

    def __call__(self, *args: Any, **kwargs: Any) -> Iterator[str]:
        gen = self.fn(*args, **kwargs)
        for chunk in gen:
            self.seen(gen, chunk)
            yield chunk

    def __eq__(self, other: object) -> bool:
        return other is self or other is self.fn

    def __hash__(self) -> int:
        return hash(self.fn)


# --------------------------------------------------------------------------
# the attributes a template may read on an IR object (or on ``emit``), and
# the closest names to one that is misspelt: the render-time error here and
# the static check (:mod:`stitchgen.authoring.checks`) word it the same way


@functools.cache
def public_attributes(cls: type) -> frozenset[str]:
    """What a template can read on an instance of ``cls``: its dataclass
    fields, properties, methods and class variables, less the names with a
    leading ``_`` (the sandbox hides them)."""
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    names.update(dir(cls))
    return frozenset(n for n in names if not n.startswith("_"))


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The names in ``candidates`` closest to ``name`` (difflib), best first."""
    return difflib.get_close_matches(name, sorted(set(candidates)), n=n, cutoff=0.6)


def no_attribute(types: Iterable[type], attr: str) -> str:
    """``'Call' has no attribute 'nde' (did you mean 'node'?)``: the error for
    ``attr`` on objects of ``types`` (one or several classes)."""
    types = list(types)
    names = " or ".join(repr(t.__name__) for t in types)
    has = "has" if len(types) == 1 else "have"
    known = frozenset().union(*(public_attributes(t) for t in types))
    near = closest(attr, known)
    hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else ""
    private = " (names starting with '_' are hidden from templates)" if attr[:1] == "_" else ""
    return f"{names} {has} no attribute {attr!r}{hint}{private}"
