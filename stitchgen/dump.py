"""A dump of what was generated, for debugging: ``STITCHGEN_DUMP_DIR=DIR``
(or ``dump_dir=`` on ``generate``/``compile``/``backend``) writes each
generated module as ``DIR/<name>-<digest>.py``, black-formatted, under a
short header (graph, pieces, inputs, versions). A file is written atomically
and never twice for the same text, and nothing already in the directory is
replaced or removed; a directory that cannot be written is a
warning, never a failed compile. When ``TORCH_TRACE`` is set, the same text
goes to ``torch._logging.trace_structured`` as the artifact
``stitchgen_generated_code`` (for tlparse); otherwise nothing is computed
(torch's structured logging costs ~0.15 ms a call even when it discards).
"""

from __future__ import annotations

import errno
import hashlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path

from .atomic import write_atomic
from .ir import Program, writes
from .torch_versions import torch_version
from .version import __version__

__all__ = ["dump_text", "emit_trace", "write_dump"]


def dump_text(program: Program, formatted_code: str, graph: str) -> str:
    """The dumped text: a header, then the black-formatted code."""
    pieces = [s.path for s in program.submods if not s.inlined]
    inlined = [fn.origin for fn in program.functions[:-1] if fn.origin]
    entry = program.entry
    # a boxed entry's inputs are what its opening unpacks from its one list
    unboxed = [name for stmt in entry.opening for name in writes(stmt)]
    inputs = unboxed or [p.keyword or p.name for p in entry.params]
    header = [
        f"# stitchgen dump: {graph} -> {program.name}",
        f"# bound pieces: {', '.join(pieces) or 'none'}",
        f"# inlined pieces: {', '.join(inlined) or 'none'}",
        f"# inputs: {', '.join(inputs) or 'none'}",
        f"# stitchgen {__version__}, torch {torch_version()}",
    ]
    return "\n".join(header) + "\n" + formatted_code


def write_dump(directory: str | os.PathLike[str], name: str, text: str) -> Path | None:
    """Write ``text`` as ``directory/<name>-<digest>.py`` (atomically, once
    per digest); None and a warning if the directory cannot be written."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    target = Path(directory) / f"{name}-{digest}.py"
    if target.is_file() and not target.is_symlink():
        return target  # the same text is there already
    try:
        if os.path.lexists(target):  # something else by that name: never replaced
            raise FileExistsError(errno.EEXIST, "not a file stitchgen wrote", str(target))
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text, sync=False)
    except OSError as exc:
        warnings.warn(
            f"stitchgen: cannot write the generated code to {directory} ({exc.strerror or exc}); "
            "the compile goes on without the dump (set STITCHGEN_DUMP_DIR or dump_dir= elsewhere)",
            RuntimeWarning,
            stacklevel=4,
        )
        return None
    return target


def emit_trace(text: Callable[[], str], name: str = "stitchgen_generated_code") -> None:
    """``text()`` as the ``trace_structured`` artifact ``name`` (computed only if kept)."""
    from torch._logging import trace_structured

    trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": name, "encoding": "string"},
        payload_fn=text,
    )
