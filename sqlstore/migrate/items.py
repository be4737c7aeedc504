"""What the importers hand to the job: source items, fingerprints and mapped sessions."""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

# The batch vocabulary lives in sqlstore.imports (backends write it); re-exported here.
from sqlstore.imports import EncodedSession, Fingerprint, LogEntry, SessionImport

FORMAT_RUNLOG = "runlog"
FORMAT_MECATL = "mecatl"
FORMATS = (FORMAT_RUNLOG, FORMAT_MECATL)

__all__ = [
    "FORMATS",
    "FORMAT_MECATL",
    "FORMAT_RUNLOG",
    "EncodedSession",
    "Fingerprint",
    "ItemBytes",
    "ItemFailed",
    "ItemSkipped",
    "LogEntry",
    "SessionImport",
    "SourceItem",
    "read_item",
]


@dataclass(frozen=True, slots=True)
class SourceItem:
    """One importable unit of a source: a run log, or a mecatl session family.

    ``name`` is the item's key in ``migration_items`` (a path relative to the source
    root); ``files`` are the files read for it, in a fixed order.
    """

    name: str
    files: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class ItemBytes:
    """The bytes of a source item's files, read once, and their fingerprint."""

    item: SourceItem
    contents: dict[Path, bytes]
    mtimes_ns: dict[Path, int]
    fingerprint: Fingerprint


def read_item(item: SourceItem) -> ItemBytes:
    """Read every file of ``item`` (missing files count as absent) and fingerprint them.

    The fingerprint covers exactly the bytes the importer maps, so an item that
    changes while it is being read is seen as changed on the next run.
    """
    contents: dict[Path, bytes] = {}
    mtimes_ns: dict[Path, int] = {}
    digest = hashlib.sha256()
    size = 0
    mtime_ns = 0
    for path in item.files:
        try:
            data, stat = _read_regular(path)
        except FileNotFoundError:
            continue
        contents[path] = data
        mtimes_ns[path] = stat.st_mtime_ns
        size += len(data)
        mtime_ns = max(mtime_ns, stat.st_mtime_ns)
        name = os.fsencode(path.name)  # a name need not be valid UTF-8
        digest.update(len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data)
    return ItemBytes(item, contents, mtimes_ns, Fingerprint(size, mtime_ns, digest.hexdigest()))


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """Read a regular file without following a symlink or blocking on a FIFO.

    The scanners skip links and special files already; this closes the window in
    which one is put in place of a scanned file.

    Raises:
        FileNotFoundError: the file is gone.
        OSError: the path is now a symlink (``ELOOP``) or not a regular file.
    """
    fd = os.open(path, _READ_FLAGS)
    try:
        stat = os.fstat(fd)
        if not S_ISREG(stat.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read(), stat
    finally:
        os.close(fd)


class ItemSkipped(Exception):
    """The item is not importable as a session; ``reason`` is the skip reason key."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class ItemFailed(Exception):
    """The item looked importable but could not be mapped; ``detail`` says why."""
