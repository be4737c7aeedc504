"""A recording VFS for power-loss simulation, used inside the process under test.

:class:`Recorder` registers :class:`LossyVFS` (an ``apsw.VFS`` inheriting from the
default ``unix`` VFS) as the process's default VFS, so every connection the
library opens goes through it without any change to how sqlstore opens files.
Every operation still happens on the real file system (the workload runs
normally); what the VFS adds is a trace, in the order the operations completed,
of what could be lost if power failed at that moment:

* ``("create", path)`` — a file opened with ``SQLITE_OPEN_CREATE`` that did not
  exist, or a file of the directory that first shows up (the database file is
  created by ``sqlstore.sqlite.connection.prepare_path`` with ``os.open``);
* ``("write", path, offset, bytes)`` and ``("trunc", path, size)``;
* ``("sync", path)`` — ``xSync`` of the file; ``("sync", path, "os.fsync")`` — an
  ``os.fsync`` the library does itself (``os.fsync`` is wrapped: it calls the
  real one, then records);
* ``("dirsync", directory)`` — the directory syncs SQLite asks for: the unix VFS
  fsyncs the directory on the first ``xSync`` of a journal or WAL handle opened
  with ``SQLITE_OPEN_CREATE`` (``UNIXFILE_DIRSYNC`` in ``os_unix.c``; verified
  with strace), and after ``xDelete(name, syncdir=True)``;
* ``("delete", path)``;
* ``("start", n, kind, info)`` / ``("ack", n, info)`` / ``("fail", n, error)`` —
  the library calls under test, bracketed by :meth:`Recorder.op`.

Operations run under one lock together with their record, so the trace order is
the order in which they took effect. Writes are recorded after they complete and
syncs after they return, so a write recorded before a sync was issued before it.
The ``-shm`` file is not recorded: it is rebuilt from the WAL after a crash.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import apsw

NAME = "lossy"
BASE = "unix"
DIRSYNC_TYPES = (
    apsw.SQLITE_OPEN_MAIN_JOURNAL | apsw.SQLITE_OPEN_WAL | apsw.SQLITE_OPEN_SUPER_JOURNAL
)

Trace = list[tuple[Any, ...]]


def _name(name: object) -> str | None:
    if isinstance(name, apsw.URIFilename):
        return name.filename()
    return name if isinstance(name, str) else None


class Recorder:
    """The trace of one workload: file operations and bracketed library calls.

    Only files directly in ``root`` are recorded (the scenario's directory). The
    files already there when recording starts are the durable starting point.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.trace: Trace = []
        self.lock = threading.RLock()
        self.initial = {name: _read(os.path.join(self.root, name)) for name in _files(self.root)}
        self.known = {os.path.join(self.root, name) for name in self.initial}
        self._ops = 0
        self._vfs: LossyVFS | None = None
        self._real_fsync = os.fsync

    # -- installation ------------------------------------------------------------

    def install(self) -> None:
        """Make the recording VFS the default and wrap ``os.fsync``."""
        self._vfs = LossyVFS(self)
        os.fsync = self._fsync

    def _fsync(self, fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        try:
            path = os.readlink(f"/proc/self/fd/{number}")
        except OSError:
            path = ""
        with self.lock:
            self._real_fsync(number)
            if self.tracked(path):
                self.saw(path)
                self.trace.append(("sync", path, "os.fsync"))

    # -- file events -------------------------------------------------------------

    def tracked(self, path: str | None) -> bool:
        """True for a file of the scenario directory other than ``-shm``."""
        return path is not None and os.path.dirname(path) == self.root and not path.endswith("-shm")

    def saw(self, path: str) -> None:
        """Record the creation of a file seen for the first time (caller holds the lock)."""
        if path not in self.known:
            self.known.add(path)
            self.trace.append(("create", path))

    def deleted(self, path: str) -> None:
        """Forget a deleted file, so a new one at the same path is a new creation."""
        self.known.discard(path)
        self.trace.append(("delete", path))

    # -- library calls -----------------------------------------------------------

    @contextmanager
    def op(self, kind: str, **info: Any) -> Iterator[dict[str, Any]]:
        """Bracket one library call: ``start`` before, ``ack`` after it returned.

        The body may add to the yielded dict; it is stored with the ``ack``. An
        exception is stored as ``fail`` and re-raised.
        """
        with self.lock:
            self._ops += 1
            number = self._ops
            self.trace.append(("start", number, kind, info))
        result: dict[str, Any] = {}
        try:
            yield result
        except BaseException as exc:
            with self.lock:
                self.trace.append(("fail", number, f"{type(exc).__name__}: {exc}"))
            raise
        with self.lock:
            self.trace.append(("ack", number, result))

    def mark(self, kind: str, **info: Any) -> None:
        """Record a point of the workload that is not a call (for example a state digest)."""
        with self.lock:
            self.trace.append(("mark", kind, info))

    def save(self, path: str, **meta: Any) -> None:
        """Write the trace, the starting files and ``meta`` to ``path`` (pickle)."""
        with self.lock, open(path, "wb") as handle:
            data = {"root": self.root, "initial": self.initial, "trace": self.trace, "meta": meta}
            pickle.dump(data, handle, protocol=pickle.HIGHEST_PROTOCOL)


class LossyVFS(apsw.VFS):  # type: ignore[misc]
    """The unix VFS with every file wrapped in :class:`LossyFile`; the process default."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        super().__init__(NAME, BASE, makedefault=True)

    def xOpen(self, name: object, flags: list[int]) -> apsw.VFSFile:
        """Open through the unix VFS; record a creation."""
        return LossyFile(self.recorder, name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        """Delete, recording the deletion and (with ``syncdir``) the directory sync."""
        rec = self.recorder
        with rec.lock:
            super().xDelete(filename, syncdir)
            if rec.tracked(filename):
                rec.deleted(filename)
                if syncdir:
                    rec.trace.append(("dirsync", rec.root))


class LossyFile(apsw.VFSFile):  # type: ignore[misc]
    """One open file: writes, truncates and syncs are recorded after they complete."""

    def __init__(self, recorder: Recorder, name: object, flags: list[int]) -> None:
        self.rec = recorder
        self.path = _name(name)
        self.on = recorder.tracked(self.path)
        # The unix VFS syncs the directory on the first xSync of such a handle.
        self.dirsync = bool(flags[0] & apsw.SQLITE_OPEN_CREATE and flags[0] & DIRSYNC_TYPES)
        with recorder.lock:
            super().__init__(BASE, name, flags)
            if self.on:
                assert self.path is not None
                recorder.saw(self.path)

    def xWrite(self, data: bytes, offset: int) -> None:
        """Write, then record the bytes."""
        with self.rec.lock:
            super().xWrite(data, offset)
            if self.on:
                self.rec.trace.append(("write", self.path, offset, bytes(data)))

    def xTruncate(self, newsize: int) -> None:
        """Truncate, then record the new size."""
        with self.rec.lock:
            super().xTruncate(newsize)
            if self.on:
                self.rec.trace.append(("trunc", self.path, newsize))

    def xSync(self, flags: int) -> None:
        """Sync, then record it (and the directory sync the unix VFS adds)."""
        with self.rec.lock:
            super().xSync(flags)
            if self.on:
                self.rec.trace.append(("sync", self.path))
                if self.dirsync:
                    self.rec.trace.append(("dirsync", self.rec.root))
            self.dirsync = False


def _files(root: str) -> list[str]:
    return sorted(
        name
        for name in os.listdir(root)
        if os.path.isfile(os.path.join(root, name)) and not name.endswith("-shm")
    )


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
