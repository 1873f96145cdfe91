"""Compiled templates kept across processes: Jinja's bytecode for templates
of your own (and the shipped ones they extend or include), so a process
after the first pays for importing Jinja, not for compiling the templates.

Where: ``$STITCHGEN_CACHE_DIR/templates``, else the user's cache directory
(``$XDG_CACHE_HOME/stitchgen/templates``, ``~/.cache/stitchgen/templates``);
``STITCHGEN_CACHE_DIR=off`` keeps nothing on disk. The cache holds code that
is loaded and run, so it is kept as an artifact store is kept (SECURITY.md):

* the folder must belong to the user and be writable by no one else (no
  group or other write bit, not a link); any other folder is refused with a
  warning, and nothing is read from it or written to it;
* an entry is keyed by the template's name and file, stitchgen's and
  Jinja's versions and the environment's filters; Jinja adds the template
  source's checksum, its own bytecode version and Python's;
* an entry is written atomically (a temporary file of its own, then
  ``os.replace``) with the SHA-256 of its bytes: an entry whose bytes do
  not match, or that Jinja cannot read, is recompiled and rewritten, never
  loaded;
* stitchgen writes only ``<key>.jbc`` files, ``<key>.checked`` files (empty:
  the checks of :meth:`~stitchgen.rendering.Templates.check` passed on the
  templates of that key, so a later process skips them) and their temporary
  files there, and deletes nothing.

A folder that cannot be written is a warning, never a failed render.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path

import jinja2

from .atomic import write_atomic
from .version import __version__

__all__ = ["CACHE_ENV", "TemplateCache", "cache_directory", "open_cache"]

#: ``STITCHGEN_CACHE_DIR=DIR`` (or ``off``)
CACHE_ENV = "STITCHGEN_CACHE_DIR"
_SUFFIX = ".jbc"
#: a set of templates the checks passed (``stitchgen.authoring.checks``): an empty file
_CHECKED = ".checked"
_DIGEST = hashlib.sha256().digest_size

#: folders already refused or unwritable in this process (warned once each)
_warned: set[str] = set()
_warned_lock = threading.Lock()


def cache_directory() -> Path | None:
    """Where compiled templates are kept (``.../templates``); None when
    ``STITCHGEN_CACHE_DIR=off``."""
    named = os.environ.get(CACHE_ENV)
    if named is not None and named.strip().lower() in ("off", "0", "none", ""):
        return None
    if named:
        return Path(named) / "templates"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "stitchgen" / "templates"


class TemplateCache(jinja2.BytecodeCache):
    """Jinja's bytecode in ``directory`` (checked by :func:`open_cache`),
    each entry covered by a SHA-256 of its bytes."""

    def __init__(self, directory: Path, salt: str) -> None:
        self.directory = directory
        self.salt = salt

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        text = f"{self.salt}\0{name}\0{filename or ''}"
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _path(self, bucket: jinja2.bccache.Bucket) -> Path:
        return self.directory / f"{bucket.key}{_SUFFIX}"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            data = self._path(bucket).read_bytes()
        except OSError:
            return  # not cached yet: Jinja compiles
        digest, payload = data[:_DIGEST], data[_DIGEST:]
        if hashlib.sha256(payload).digest() != digest:
            return  # corrupt or edited: compiled again, and rewritten
        # Jinja checks its bytecode version and the source's checksum, and
        # resets the bucket (compiles) when either differs or marshal fails
        bucket.bytecode_from_string(payload)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        payload = bucket.bytecode_to_string()
        self._write(self._path(bucket), hashlib.sha256(payload).digest() + payload)

    def _write(self, target: Path, data: bytes) -> None:
        """``data`` into ``target``, atomically (a temporary file of its own,
        then ``os.replace``); a folder that cannot be written is a warning."""
        try:
            write_atomic(target, data, sync=False)
        except OSError as exc:
            _warn(self.directory, f"cannot be written ({exc.strerror or exc})")

    def clear(self) -> None:
        """Nothing: stitchgen deletes nothing in the cache folder."""

    def checks_key(self, files: Iterable[Path], options: str) -> str:
        """The key of a set of templates as the checks see it: this cache's
        salt (versions, filters), ``options`` and each file's path and bytes."""
        digest = hashlib.sha256(f"{self.salt}\0{options}".encode("utf-8", "surrogatepass"))
        for path in files:
            digest.update(b"\0" + str(path).encode("utf-8", "surrogatepass") + b"\0")
            digest.update(path.read_bytes())
        return digest.hexdigest()

    def checked(self, key: str) -> bool:
        """Did the checks pass, with nothing to say, on the templates of ``key``?"""
        return (self.directory / f"{key}{_CHECKED}").is_file()

    def mark_checked(self, key: str) -> None:
        """Record that the checks passed on the templates of ``key`` (an empty
        file, written atomically; a folder that cannot be written is a warning)."""
        self._write(self.directory / f"{key}{_CHECKED}", b"")


def open_cache(filters: Iterable[str]) -> TemplateCache | None:
    """The cache for an environment with ``filters``, or None: turned off, or
    a folder refused (not the user's, writable by others) or not creatable."""
    directory = cache_directory()
    if directory is None:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = os.lstat(directory)
    except OSError as exc:
        _warn(directory, f"cannot be created ({exc.strerror or exc})")
        return None
    why = _unsafe(status)
    if why:
        _warn(directory, why)
        return None
    salt = f"stitchgen {__version__}; jinja {jinja2.__version__}; filters {sorted(filters)}"
    return TemplateCache(directory, salt)


def _unsafe(status: os.stat_result) -> str:
    """Why a folder with ``status`` may not hold code we load; "" if it may."""
    if not stat.S_ISDIR(status.st_mode):
        return "is not a directory (a link or a file)"
    getuid = getattr(os, "getuid", None)
    if getuid is not None and status.st_uid != getuid():
        return "belongs to another user"
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users"
    return ""


def _warn(directory: Path, why: str) -> None:
    with _warned_lock:
        if str(directory) in _warned:
            return
        _warned.add(str(directory))
    warnings.warn(
        f"stitchgen: the template cache {directory} {why}; templates are compiled in "
        f"this process instead (set {CACHE_ENV} to a folder of your own, or to 'off')",
        RuntimeWarning,
        stacklevel=2,
    )
