"""Writing a file whole or not at all: a temporary file of its own beside
it (``.<name>.<random><suffix>``), then ``os.replace`` over it. A reader
sees the old bytes or the new ones, never half; a failed or interrupted
write removes its temporary file (a killed process may leave one, which
its suffix names as the writer's). The one writer of the golden files,
their records, a template directory's lock, the dumps and the template
cache.

A new file gets the mode a plain ``open(path, "w")`` would give it (``0o666``
less the process's umask: the kernel applies it, as it does for ``open``);
a file replaced keeps its mode. :func:`staging_dir` does the same for a
directory swapped in whole (an artifact)."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

__all__ = ["staging_dir", "write_atomic"]


def _beside(path: Path, suffix: str, make: Callable[[str], int | None]) -> tuple[str, int | None]:
    """A new entry ``.<name>.<random><suffix>`` beside ``path``, made by
    ``make`` (which fails with FileExistsError if the name is taken), and
    given ``path``'s mode where ``path`` exists."""
    while True:
        staging = str(path.parent / f".{path.name}.{secrets.token_hex(4)}{suffix}")
        try:
            fd = make(staging)
        except FileExistsError:
            continue
        break
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:  # no file there yet: the umask's mode stands
        return staging, fd
    try:
        if fd is None:
            os.chmod(staging, mode)
        else:
            os.fchmod(fd, mode)
    except BaseException:
        if fd is not None:
            os.close(fd)
        _remove(staging)
        raise
    return staging, fd


def _remove(staging: str) -> None:
    if os.path.isdir(staging) and not os.path.islink(staging):
        os.rmdir(staging)
    else:
        Path(staging).unlink(missing_ok=True)


def staging_dir(path: Path, suffix: str = "") -> Path:
    """An empty directory beside ``path``, to be filled and swapped in for
    it: the mode a plain ``mkdir`` gives (``0o777`` less the umask), or
    ``path``'s own where it exists."""
    staging, _ = _beside(path, suffix, lambda name: os.mkdir(name, 0o777))
    return Path(staging)


def write_atomic(path: Path, data: str | bytes, *, suffix: str = ".tmp", sync: bool = True) -> None:
    """``data`` (text as UTF-8) into ``path``, atomically; ``sync`` flushes
    it to the disk (fsync) before the rename, so a crash of the machine
    cannot leave an empty file under the new name either."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    staging, fd = _beside(path, suffix, lambda name: os.open(name, flags, 0o666))
    assert fd is not None
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
