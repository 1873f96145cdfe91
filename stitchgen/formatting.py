"""The optional formatting stage: black, cached by source text.

Black costs about a second on an 80-layer stitching graph, so the compile
path never runs it unless asked; display and golden files do. Results are
cached (LRU, keyed by the source itself), so formatting the same graph twice
costs one dictionary lookup the second time. The golden files record the
black version that produced them (see ``stitchgen golden``).
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["OLDEST_PYTHON", "black_mode", "format_source"]


#: the oldest Python the generated code runs on: stitchgen's ``requires-python``
#: (>=3.10). black is told the target versions from it, as black's own command
#: line infers them from a project's ``requires-python``, so ``black --check``
#: run on the golden files agrees with them (black left to infer the versions
#: from each file would add no trailing comma after ``*, name``)
OLDEST_PYTHON = (3, 10)


@functools.lru_cache(maxsize=64)
def format_source(source: str) -> str:
    """``source`` formatted by black (line length 88; target versions: every
    Python from :data:`OLDEST_PYTHON` on)."""
    return _black().format_str(source, mode=black_mode())


@functools.cache
def black_mode() -> Any:
    """black's mode for stitchgen's code: the default, targeting Python
    :data:`OLDEST_PYTHON` and newer."""
    black = _black()
    oldest = black.TargetVersion[f"PY{OLDEST_PYTHON[0]}{OLDEST_PYTHON[1]}"].value
    versions = {v for v in black.TargetVersion if v.value >= oldest}
    return black.Mode(target_versions=versions)


def _black() -> Any:
    import black  # imported lazily: ~0.1 s that the compile path never pays

    return black
