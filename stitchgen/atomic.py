"""Writing a file whole or not at all: a temporary file of its own beside
it (``.<name>.<random><suffix>``), then ``os.replace`` over it. A reader
sees the old bytes or the new ones, never half; a failed or interrupted
write removes its temporary file (a killed process may leave one, which
its suffix names as the writer's). The one writer of the golden files,
their records, a template directory's lock, the dumps and the template
cache."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: Path, data: str | bytes, *, suffix: str = ".tmp", sync: bool = True) -> None:
    """``data`` (text as UTF-8) into ``path``, atomically; ``sync`` flushes
    it to the disk (fsync) before the rename, so a crash of the machine
    cannot leave an empty file under the new name either."""
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise
