"""The cyclic garbage collector, paused while stitchgen compiles.

Lowering a big graph allocates tens of thousands of small IR objects that
live until the code is rendered. With the collector running, young
collections promote them, and on a large heap (a serving process, torch and
a traced model loaded) that promotion is what tips CPython into a *full*
collection — a pause proportional to the whole heap, measured at 0.24 s on
the 80-layer benchmark with ~530,000 objects alive, for a compile that
otherwise takes ~60 ms. Our objects hold no reference cycles: reference
counting frees them all. So, like :mod:`timeit`, stitchgen turns the
collector off while it lowers, renders and loads, and back on (only if it
was on) right after; by then its objects are gone, so they never count
towards the next full collection — the collector's schedule is left as the
rest of the program made it.

The same holds while the compile path's modules are imported (``pipeline``
and ``compat`` import theirs inside :func:`paused`): the import makes some
2,700 objects — functions, classes, code constants — that live as long as
the process. With the collector on, three young collections examine them
during the import, and by promoting them they make the next collection a
middle-generation one, which the first compile then pays (measured: about
1 ms of a fresh process's import + first compile of the 80-layer benchmark,
against 0.3 ms for the one young collection that examines them after a
paused import). ``torch`` is imported before the pause, as the collector
would see it anyway.

Set ``STITCHGEN_KEEP_GC=1`` to leave the collector alone. A program that
switches the collector off in another thread while stitchgen compiles may
find it switched back on at the end.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside the block (if it was on, and unless
    ``STITCHGEN_KEEP_GC=1``); nested uses are free.

    >>> import gc
    >>> with paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
    """
    resume = gc.isenabled() and os.environ.get("STITCHGEN_KEEP_GC", "") in ("", "0")
    if resume:
        gc.disable()
    try:
        yield
    finally:
        if resume:
            gc.enable()
