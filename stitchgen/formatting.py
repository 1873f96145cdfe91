"""The optional formatting stage: black, cached by source text.

Black costs about a second on an 80-layer stitching graph, so the compile
path never runs it unless asked; display and golden files do. Results are
cached (LRU, keyed by the source itself), so formatting the same graph twice
costs one dictionary lookup the second time. The golden files record the
black version that produced them (see ``stitchgen golden``).
"""

from __future__ import annotations

import functools

__all__ = ["format_source"]


@functools.lru_cache(maxsize=64)
def format_source(source: str) -> str:
    """``source`` formatted by black (line length 88, default mode)."""
    import black  # imported lazily: ~0.1 s that the compile path never pays

    return black.format_str(source, mode=black.Mode())
