"""Replay a recorded trace (:mod:`tests.reliability.lossy_vfs`) into power-cut images.

**The model.** Power fails between two entries of the trace (a *cut point*). What
the disk then holds, per file, is its content as of its last sync plus some of
the writes and truncates made since (*pending*), and per directory, the files
created or deleted up to its last directory sync plus maybe some of the later
ones. Each cut point is materialised in several ways (:data:`MODES`):

* ``synced`` — only what was synced;
* ``all`` — every write (what a process kill leaves);
* ``prefix`` — a random in-order prefix of the pending writes of each file, the
  next write torn at a 512-byte boundary of the file (a sector boundary);
* ``sector`` — each 512-byte sector touched by pending writes independently holds
  one of its versions (as synced, or after its 1st, 2nd ... touching write), and
  the file has its synced or its newest size;

each with the creations and deletions of files kept (``/kept``) or, where a
directory sync does not cover them, undone (``/undone``: a new file is gone, a
deleted one is back with its content as of its deletion, treated the same way).
Sector outcomes never damage bytes no write touched (SQLite's unix VFS declares
``SQLITE_IOCAP_POWERSAFE_OVERWRITE``). ``-shm`` files are never part of an image
(SQLite rebuilds the WAL index from the WAL).

Identical images are checked once (most cut points of a quiet stretch give the
same synced image).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import random
from dataclasses import dataclass, field
from typing import Any

SECTOR = 512
_UIDS = itertools.count()
MODES = tuple(
    f"{data}/{names}"
    for data in ("synced", "all", "prefix", "sector")
    for names in ("kept", "undone")
)

Image = dict[str, bytes]


@dataclass
class _Inode:
    """One file's life at one path: content as of its last sync, and what came after."""

    base: bytearray = field(default_factory=bytearray)
    pending: list[tuple[Any, ...]] = field(default_factory=list)
    syncs: int = 0
    uid: int = field(default_factory=lambda: next(_UIDS))

    def apply(self, ops: list[tuple[Any, ...]]) -> bytearray:
        data = bytearray(self.base)
        for op in ops:
            _apply(data, op)
        return data


def _apply(data: bytearray, op: tuple[Any, ...]) -> None:
    if op[0] == "write":
        offset, chunk = op[2], op[3]
        if len(data) < offset:
            data.extend(bytes(offset - len(data)))
        data[offset : offset + len(chunk)] = chunk
    elif op[0] == "trunc":
        del data[op[2] :]
        if len(data) < op[2]:
            data.extend(bytes(op[2] - len(data)))


def _torn(op: tuple[Any, ...], rng: random.Random) -> tuple[Any, ...] | None:
    """The write ``op`` cut at a random sector boundary inside it (None: nothing of it)."""
    if op[0] != "write":
        return None
    offset, chunk = op[2], op[3]
    bounds = [b for b in range((offset // SECTOR + 1) * SECTOR, offset + len(chunk), SECTOR)]
    if not bounds:
        return None
    end = rng.choice(bounds)
    return ("write", op[1], offset, chunk[: end - offset])


def _prefix(inode: _Inode, rng: random.Random) -> bytearray:
    keep = rng.randint(0, len(inode.pending))
    ops = list(inode.pending[:keep])
    if keep < len(inode.pending):
        torn = _torn(inode.pending[keep], rng)
        if torn is not None:
            ops.append(torn)
    return inode.apply(ops)


def _sectors(inode: _Inode, rng: random.Random) -> bytearray:
    newest = inode.apply(inode.pending)
    data = bytearray(inode.base)
    touching: dict[int, list[tuple[int, bytes]]] = {}
    for op in inode.pending:
        if op[0] != "write":
            continue
        offset, chunk = op[2], op[3]
        for sector in range(offset // SECTOR, (offset + len(chunk) - 1) // SECTOR + 1):
            touching.setdefault(sector, []).append((offset, chunk))
    size = rng.choice((len(inode.base), len(newest)))
    if len(data) < size:
        data.extend(bytes(size - len(data)))
    for sector, writes in touching.items():
        start = sector * SECTOR
        if start >= size:
            continue
        block = bytearray(data[start : start + SECTOR].ljust(SECTOR, b"\0"))
        for offset, chunk in writes[: rng.randint(0, len(writes))]:
            lo, hi = max(offset, start), min(offset + len(chunk), start + SECTOR)
            block[lo - start : hi - start] = chunk[lo - offset : hi - offset]
        data[start : start + SECTOR] = block
    del data[size:]
    return data


class Replay:
    """Walk a trace, keeping each file's synced content and pending writes."""

    def __init__(self, recording: dict[str, Any]) -> None:
        self.root: str = recording["root"]
        self.trace: list[tuple[Any, ...]] = recording["trace"]
        self.live: dict[str, _Inode] = {}
        for name, data in recording["initial"].items():
            self.live[os.path.join(self.root, name)] = _Inode(bytearray(data))
        self.durable = dict(self.live)
        self.position = 0

    def advance(self, to: int) -> None:
        """Apply the trace up to (not including) entry ``to``."""
        assert to >= self.position
        for entry in self.trace[self.position : to]:
            kind = entry[0]
            if kind == "create":
                self.live[entry[1]] = _Inode()
            elif kind in ("write", "trunc"):
                self.live.setdefault(entry[1], _Inode()).pending.append(entry)
            elif kind == "sync":
                inode = self.live.get(entry[1])
                if inode is not None:
                    inode.base = inode.apply(inode.pending)
                    inode.pending = []
                    inode.syncs += 1
            elif kind == "dirsync":
                self.durable = dict(self.live)
            elif kind == "delete":
                self.live.pop(entry[1], None)
        self.position = to

    def key(self, mode: str) -> tuple[Any, ...] | None:
        """A cheap identity of the image ``mode`` gives, when it is not random; else None.

        ``synced`` and ``all`` are determined by each file's inode, sync count and
        number of pending writes; so are the random modes when nothing is pending.
        """
        data_mode, names = mode.split("/")
        files = self.live if names == "kept" else self.durable
        if data_mode not in ("synced", "all") and any(i.pending for i in files.values()):
            return None
        full = data_mode == "all"
        return tuple(
            (path, i.uid, i.syncs, len(i.pending) if full else 0)
            for path, i in sorted(files.items())
        )

    def image(self, mode: str, rng: random.Random) -> Image:
        """The files on disk after a power cut at the current position, in ``mode``."""
        data_mode, names = mode.split("/")
        files = self.live if names == "kept" else self.durable
        out: Image = {}
        for path, inode in sorted(files.items()):
            if data_mode == "synced":
                content = inode.base
            elif data_mode == "all":
                content = inode.apply(inode.pending)
            elif data_mode == "prefix":
                content = _prefix(inode, rng)
            else:
                content = _sectors(inode, rng)
            out[os.path.basename(path)] = bytes(content)
        return out


def digest(image: Image) -> str:
    """A digest of an image's file names and contents (to check each distinct image once)."""
    h = hashlib.sha256()
    for name, content in sorted(image.items()):
        h.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return h.hexdigest()


def cut_points(trace: list[tuple[Any, ...]], count: int, seed: int) -> list[int]:
    """Choose ``count`` cut points, favouring the moments around syncs, deletions and acks.

    Every position just before and just after a ``sync``, ``dirsync``, ``delete``,
    ``ack`` or ``start`` is a candidate (before a sync: a commit written but not
    yet durable; after: durable but not yet acknowledged); a third of the points
    are drawn uniformly from the whole trace. The end of the trace is always in.
    """
    rng = random.Random(seed)
    special = sorted(
        {
            i + d
            for i, entry in enumerate(trace)
            if entry[0] in ("sync", "dirsync", "delete", "ack", "start", "create")
            for d in (0, 1)
        }
    )
    chosen = {len(trace)}
    wanted_special = min(len(special), count * 2 // 3)
    chosen.update(rng.sample(special, wanted_special))
    while len(chosen) < min(count, len(trace) + 1):
        chosen.add(rng.randint(0, len(trace)))
    return sorted(chosen)
