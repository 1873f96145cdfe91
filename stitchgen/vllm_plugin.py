"""stitchgen inside vLLM, turned on by one environment variable: a vLLM
general plugin (entry point ``stitchgen`` in ``vllm.general_plugins``,
loaded by ``vllm.plugins.load_general_plugins()`` in every vLLM process).

``STITCHGEN_VLLM=1``: vLLM's codegen names — the functions of
``vllm.compilation.codegen``, and the names ``vllm.compilation.backends``
(the compile) and ``vllm.compilation.caching`` (a warm start from vLLM's
compile cache) imported from it — are :mod:`stitchgen.compat`'s, in this
process. Unset or ``0``: nothing changes and nothing is imported but this
module. Any other value: a warning naming the accepted ones, nothing
changed.

Before changing anything the plugin checks that the vLLM it finds has the
codegen API ``stitchgen.compat`` implements (vLLM 0.22 to 0.34's): every name
above, vLLM's own function behind each, with ``compat``'s parameters. On any
other vLLM it warns once, naming vLLM's version and what it did not find,
and leaves vLLM untouched. Loading it again changes nothing.

vLLM's compile cache keeps the code it ran, keyed by what vLLM hashes
(``vllm.envs.compile_factors()``: every entry of vLLM's table of
environment variables, ``vllm.envs.environment_variables``). On, the plugin
adds one entry to that table, :data:`CACHE_FACTOR`, whose value says that
the plugin is on, stitchgen's version, the template set and a digest of the
files of ``STITCHGEN_TEMPLATE_DIR``: a cache written with the plugin off,
by another stitchgen or with other templates is not loaded, and the code is
generated anew. Off, nothing is added: the key is vLLM's own. A vLLM with no
such table (none the plugin accepts) gets one warning at load saying what
to do instead (clear vLLM's cache, or ``VLLM_DISABLE_COMPILE_CACHE=1``
once).

``STITCHGEN_TEMPLATE_DIR=DIR`` (with ``STITCHGEN_VLLM=1``): the code vLLM
runs is written with the templates in ``DIR`` before the ``vllm`` variant's
(:class:`stitchgen.compat.Codegen`). The directory is checked at load — it
must exist, and its templates must write code that runs a small stitching
graph as the graph does — and a bad one is a
:class:`stitchgen.TemplateError` naming it, with vLLM untouched.
"""

from __future__ import annotations

import functools
import os
from typing import Any

__all__ = ["CACHE_FACTOR", "ENABLE", "TARGETS", "TEMPLATE_DIR", "cache_factor", "register"]

#: the switch: "1" on; unset, "" or "0" off
ENABLE = "STITCHGEN_VLLM"
#: a template directory for the code vLLM runs
TEMPLATE_DIR = "STITCHGEN_TEMPLATE_DIR"
#: the entry the plugin adds to vLLM's table of environment variables (which
#: vLLM hashes into its compile-cache key) while it is on
CACHE_FACTOR = "STITCHGEN_VLLM_CODEGEN"
_ON = ("1",)
_OFF = ("", "0")

#: vLLM's modules and the codegen names the plugin rebinds in each (vLLM
#: 0.34: backends calls the first two, caching's warm start the loader)
TARGETS: dict[str, tuple[str, ...]] = {
    "vllm.compilation.codegen": (
        "generate_execution_code",
        "generate_execution_code_with_name",
        "compile_execution_fn",
    ),
    "vllm.compilation.backends": ("generate_execution_code", "compile_execution_fn"),
    "vllm.compilation.caching": ("compile_execution_fn",),
}
_CODEGEN = "vllm.compilation.codegen"


def register() -> None:
    """vLLM's entry point: turn stitchgen on in this process when
    ``STITCHGEN_VLLM=1`` (the module docstring says what changes)."""
    value = os.environ.get(ENABLE, "")
    if value in _OFF:
        return
    logger = _logger()
    if value not in _ON:
        logger.warning(
            "%s=%r is not a value stitchgen knows: set %s=1 to have stitchgen write vLLM's "
            "stitching code, or 0 (or leave it unset) for vLLM's own; vLLM is unchanged",
            ENABLE,
            value,
            ENABLE,
        )
        return
    _enable(logger)


def _logger() -> Any:
    """vLLM's logger (its handler, format and level: a child of ``vllm``)."""
    import logging

    try:
        from vllm.logger import init_logger
    except ImportError:  # a vLLM that moved it: the plain logger of that name
        return logging.getLogger("vllm.stitchgen")
    return init_logger("vllm.stitchgen")


def _enable(logger: Any) -> None:
    import importlib

    import vllm

    from .version import __version__

    modules: dict[str, Any] = {}
    missing: list[str] = []
    for name in TARGETS:
        try:
            modules[name] = importlib.import_module(name)
        except Exception as exc:  # moved, or failing on import: not the vLLM we know
            missing.append(f"module {name} ({type(exc).__name__}: {exc})")
    if not missing:
        if all(_ours(getattr(modules[n], a, None)) for n, names in TARGETS.items() for a in names):
            return  # loaded before: nothing to change
        missing = _unmatched(modules)
    if missing:
        _warn_once(
            logger,
            f"stitchgen {__version__}: vLLM {getattr(vllm, '__version__', 'of unknown version')} "
            "does not have the codegen API stitchgen.compat implements (vLLM 0.22 to 0.34's): "
            f"{'; '.join(missing)}. vLLM's own codegen stays in use.",
        )
        return
    directory = os.environ.get(TEMPLATE_DIR) or None
    ours = _replacements(directory)  # a bad directory raises here: vLLM untouched
    keyed = _key_the_cache(logger, directory)
    for name, names in TARGETS.items():
        for attr in names:
            setattr(modules[name], attr, ours[attr])
    logger.info(
        "stitchgen %s writes vLLM's stitching code in this process (%s=1%s%s)",
        __version__,
        ENABLE,
        f", templates from {directory}" if directory else "",
        f"; vLLM's compile-cache key holds {CACHE_FACTOR}" if keyed else "",
    )


def cache_factor(directory: str | None) -> str:
    """What decides the code the plugin has vLLM run, as one string for
    vLLM's compile-cache key: the plugin on, stitchgen's version, the
    template set, and a SHA-256 of the template directory's files (their
    paths inside it and their bytes; not where it is)."""
    import hashlib
    from pathlib import Path

    from .version import __version__

    digest = hashlib.sha256()
    if directory:
        root = Path(directory)
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    templates = f"vllm + {digest.hexdigest()}" if directory else "vllm"
    return f"on; stitchgen {__version__}; templates {templates}"


def _key_the_cache(logger: Any, directory: str | None) -> bool:
    """Add :data:`CACHE_FACTOR` to vLLM's table of environment variables,
    which ``vllm.envs.compile_factors()`` hashes into the compile-cache key;
    False (and one warning) where this vLLM has no such table."""
    import importlib

    try:
        envs = importlib.import_module("vllm.envs")
    except Exception:  # a vLLM without it: said below
        envs = None
    table = getattr(envs, "environment_variables", None)
    if not isinstance(table, dict) or not callable(getattr(envs, "compile_factors", None)):
        _warn_once(
            logger,
            f"stitchgen: this vLLM has no table of environment variables that its compile-cache "
            f"key hashes (vllm.envs.environment_variables, compile_factors): a cache written "
            f"with {ENABLE} off, or with other templates, would be loaded as it is. After "
            f"turning the plugin on or off, or changing {TEMPLATE_DIR}'s templates, clear "
            "vLLM's compile cache or run once with VLLM_DISABLE_COMPILE_CACHE=1.",
        )
        return False
    value = cache_factor(directory)
    table[CACHE_FACTOR] = lambda: value
    return True


@functools.cache
def _warn_once(logger: Any, message: str) -> None:
    """``message`` as a warning, once per process however often vLLM loads
    its plugins (a cache of what was said, not depending on the logger
    vLLM's version offers)."""
    logger.warning(message)


def _ours(function: Any) -> bool:
    """Bound by this plugin: a function (or ``Codegen`` method) of ``compat``."""
    return getattr(function, "__module__", None) == "stitchgen.compat"


def _parameters(function: Any) -> list[tuple[str, Any, Any]] | None:
    """Each parameter's name, kind and default; None for a callable that
    has no signature to read (a builtin, say)."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default) for p in parameters]


def _unmatched(modules: dict[str, Any]) -> list[str]:
    """What the vLLM found lacks of the API ``compat`` implements: each name
    present, the one codegen function behind it in every module, with
    ``compat``'s parameters."""
    from . import compat

    codegen = modules[_CODEGEN]
    problems = []
    for attr in TARGETS[_CODEGEN]:
        theirs = getattr(codegen, attr, None)
        if theirs is None:
            problems.append(f"no {_CODEGEN}.{attr}")
        elif not callable(theirs) or _parameters(theirs) != _parameters(getattr(compat, attr)):
            shown = _signature(theirs)
            problems.append(
                f"{_CODEGEN}.{attr}{shown} is not {attr}{_signature(getattr(compat, attr))}"
            )
    for name, names in TARGETS.items():
        if name == _CODEGEN:
            continue
        for attr in names:
            found = getattr(modules[name], attr, None)
            if found is None:
                problems.append(f"no {name}.{attr}")
            elif found is not getattr(codegen, attr, None):
                problems.append(f"{name}.{attr} is not {_CODEGEN}.{attr}")
    return problems


def _signature(function: Any) -> str:
    import inspect

    try:
        return str(inspect.signature(function).replace(return_annotation=inspect.Signature.empty))
    except (TypeError, ValueError):
        return " (no signature)"


def _replacements(directory: str | None) -> dict[str, Any]:
    """The functions bound into vLLM: ``compat``'s, or the methods of a
    :class:`~stitchgen.compat.Codegen` over ``directory``'s templates once
    they have been checked."""
    from . import compat

    generate: Any = compat if directory is None else _checked_codegen(directory)
    return {
        "generate_execution_code": generate.generate_execution_code,
        "generate_execution_code_with_name": generate.generate_execution_code_with_name,
        "compile_execution_fn": compat.compile_execution_fn,
    }


def _checked_codegen(directory: str) -> Any:
    """A ``Codegen`` over ``directory``, once its templates have written
    code that runs a small stitching graph (an inlined piece, a bound
    piece, a constant) as the graph does; else a TemplateError naming it."""
    import operator

    import torch
    import torch.fx as fx

    from . import compat
    from .errors import TemplateError

    where = f"{TEMPLATE_DIR}={directory!r}"
    if not os.path.isdir(directory):
        raise TemplateError(f"{where}: no such directory (stitchgen's vLLM plugin)")
    try:
        codegen = compat.Codegen([directory])
        graph = fx.Graph()
        x = graph.placeholder("x")
        inlined = graph.call_module("submod_0", (x,))
        value = graph.call_function(operator.getitem, (inlined, 0))
        bound = graph.call_module("submod_1", (value,))
        graph.output(graph.call_function(torch.mul, (bound, 2.0)))
        piece = fx.symbolic_trace(lambda a: (a + 1,))
        probe = fx.GraphModule({"submod_0": piece, "submod_1": torch.nn.ReLU()}, graph)
        code, names, consts = codegen.generate_execution_code(probe)
        callables: dict[str, Any] = {"submod_1": probe.submod_1}
        fn = compat.compile_execution_fn(code, callables, names, consts)
        sample = torch.linspace(-2.0, 2.0, 5)
        same = torch.equal(fn(sample), probe(sample))
    except TemplateError as exc:
        raise TemplateError(f"{where}: {exc}", exc.template, exc.lineno) from exc
    except Exception as exc:
        raise TemplateError(
            f"{where}: the code its templates write does not run ({type(exc).__name__}: {exc})"
        ) from exc
    if not same:
        raise TemplateError(f"{where}: the code its templates write computes another result")
    return codegen
