"""Snapshots and inventory in Redis (``RedisStore.sessions``)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlstore import clock, snapshot
from sqlstore.changes import prepare_save
from sqlstore.errors import MetadataCursorRestart, SessionAlreadyExists, SessionNotFound
from sqlstore.fold import load_or_fold
from sqlstore.inventory import Page, SessionMeta, StoredSession
from sqlstore.model import Principal, validate_session_id
from sqlstore.pager import PagerPosition, decode_pager_cursor, encode_pager_cursor, scope_key
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection
from sqlstore.redis.units import apply_unit
from sqlstore.session import Session

if TYPE_CHECKING:
    from sqlstore.redis.events import RedisEvents

ITER_META_PAGE_ROWS = 500
"""Inventory rows read per script call by ``iter_meta``."""


class RedisSessions:
    """Session snapshots, listing, keyset paging and (conditional) deletion."""

    def __init__(self, conn: Connection, events: RedisEvents) -> None:
        self._c = conn
        self._events = events

    def _put(self, session: Session, *, must_be_new: bool) -> int:
        blob = snapshot.encode(session)
        now_ns = clock.now_ns()
        k = self._c.keys
        with self._c.guard():
            version = int(
                self._c.put(
                    keys=[
                        k.session(session.id),
                        k.page_index,
                        k.age_index,
                        k.write_seq,
                        k.inventory_generation,
                    ],
                    args=[
                        "1" if must_be_new else "0",
                        blob,
                        str(now_ns),
                        keys.meta_json(session, blob),
                        keys.session_compared(session),
                        keys.owner_scope(session),
                        keys.page_prefix(now_ns),
                        keys.age_prefix(now_ns),
                        keys.hex_id(session.id),
                        self._c.prefix,
                    ],
                )
            )
        return version

    def save(self, session: Session, *, expected_version: int | None = None) -> int:
        """Replace the snapshot (one atomic script) and return its new version.

        With ``expected_version`` the save is conditional, checked inside the same
        script (``0``: no snapshot may be stored yet; see :mod:`sqlstore.changes`).
        Returns once Redis acknowledged the write (durability: see docs/redis.md).

        Raises:
            VersionConflict: the stored version differs, or the session is missing.
            SnapshotError: the session cannot be encoded.
            StoreUnavailable: Redis cannot be reached.
        """
        return apply_unit(self._c, prepare_save(session, expected_version)).version

    def load_versioned(self, session_id: str) -> tuple[Session, int]:
        """Return the snapshot and its version, read by one command (``HMGET``).

        Raises:
            SessionNotFound: no snapshot under the id.
        """
        validate_session_id(session_id)
        with self._c.guard():
            blob, version = self._c.client.hmget(
                self._c.keys.session(session_id), ["blob", "version"]
            )
        if blob is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(blob), int(version)

    def create(self, session: Session) -> None:
        """Store the snapshot only if the id has none (atomic for every client of the server).

        Raises:
            SessionAlreadyExists: a snapshot exists; nothing was changed.
        """
        if self._put(session, must_be_new=True) == 0:
            raise SessionAlreadyExists(session.id)

    def load(self, session_id: str) -> Session:
        """Return an independent copy of the snapshot.

        Raises:
            SessionNotFound: no snapshot under the id (the message names it).
        """
        validate_session_id(session_id)
        with self._c.guard():
            blob = self._c.client.hget(self._c.keys.session(session_id), "blob")
        if blob is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(blob)

    def load_or_fold(self, session_id: str, seed: object) -> Session:
        """Return the snapshot, or fold the event log with ``seed`` when there is none."""
        return load_or_fold(self, self._events, session_id, seed)

    def list(self) -> builtins.list[StoredSession]:
        """Return every session with its modification time (read from the age index only)."""
        with self._c.guard():
            members = self._c.client.zrange(self._c.keys.age_index, 0, -1)
        out = []
        for member in members:
            mtime_ns, session_id = keys.parse_age_member(member)
            out.append(StoredSession(session_id, clock.from_ns(mtime_ns)))
        return out

    def meta(self, session_id: str) -> SessionMeta:
        """Return one inventory row.

        Raises:
            SessionNotFound: no snapshot under the id.
        """
        validate_session_id(session_id)
        with self._c.guard():
            meta, mtime, version = self._c.client.hmget(
                self._c.keys.session(session_id), ["meta", "mtime_ns", "version"]
            )
        if meta is None or mtime is None or version is None:
            raise SessionNotFound(session_id)
        return keys.build_meta(session_id, meta, mtime, version)

    def _range(
        self, index: str, generation: str, after: str, anchored: bool, limit: int
    ) -> tuple[int, int, bool, builtins.list[tuple[bytes, SessionMeta]]]:
        with self._c.guard():
            reply: builtins.list[Any] = self._c.range(
                keys=[index, self._c.keys.inventory_generation],
                args=[
                    generation,
                    after,
                    "1" if anchored else "0",
                    str(limit),
                    self._c.prefix,
                    str(keys.MEMBER_TIME_HEX),
                ],
            )
        if reply[0] == b"restart":
            why = reply[1].decode()
            if why == "generation":
                raise MetadataCursorRestart(
                    "the session inventory changed since the cursor was issued"
                )
            raise MetadataCursorRestart("the page cursor's row is gone or has moved")
        rows = []
        for i in range(3, len(reply), 4):
            member, meta, mtime, version = reply[i : i + 4]
            if not meta:
                continue  # the hash vanished between index and read: cannot happen in one script
            session_id = bytes.fromhex(member[keys.MEMBER_TIME_HEX + 1 :].decode()).decode()
            rows.append((member, keys.build_meta(session_id, meta, mtime, version)))
        return int(reply[0]), int(reply[1]), bool(int(reply[2])), rows

    def iter_meta(self) -> Iterator[SessionMeta]:
        """Yield every inventory row oldest first by (modified_at, id), a page at a time.

        Memory stays bounded whatever the store's size; rows written meanwhile
        may or may not be seen (a session written during the walk moves to the end).
        """
        after = b""
        while True:
            _, _, more, rows = self._range(
                self._c.keys.age_index, "", after.decode(), False, ITER_META_PAGE_ROWS
            )
            for _, meta in rows:
                yield meta
            if not more or not rows:
                return
            after = rows[-1][0]

    def page(
        self,
        limit: int,
        cursor: str | None = None,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
    ) -> Page:
        """Return one page of inventory rows, modified_at DESC then id ASC (one atomic read).

        With ``enforce_owner`` only sessions whose owner shares (issuer, subject)
        with ``owner`` are counted and returned (``owner=None`` selects nothing).

        Raises:
            MetadataCursorRestart: the cursor is from another scope, an older
                inventory generation, a row that moved, or does not decode.
            ValueError: ``limit`` is not positive.
        """
        if limit <= 0:
            raise ValueError("limit must be > 0")
        scope = scope_key(owner, enforce_owner)
        if enforce_owner and owner is None:
            return Page(sessions=[], next_cursor=None, total=0)
        index = self._c.keys.page_index if not enforce_owner else self._c.keys.owner_index(scope)
        expected = ""
        after = ""
        if cursor:
            with self._c.guard():
                current = int(self._c.client.get(self._c.keys.inventory_generation) or 0)
            pos = decode_pager_cursor(cursor, scope, current)
            expected = str(pos.generation)
            after = keys.page_member(pos.modified_at_ns, pos.session_id)
        generation, total, more, rows = self._range(index, expected, after, True, limit)
        next_cursor = None
        if more and rows:
            last = rows[-1][0].decode()
            mtime_ns = keys.U64 - int(last[: keys.MEMBER_TIME_HEX], 16)
            next_cursor = encode_pager_cursor(
                PagerPosition(scope, generation, mtime_ns, rows[-1][1].id)
            )
        return Page(sessions=[m for _, m in rows], next_cursor=next_cursor, total=total)

    def delete(self, session_id: str) -> None:
        """Remove snapshot, events, generation and audit rows in one script; idempotent."""
        validate_session_id(session_id)
        self._delete(session_id, None)

    def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete the session only if its row still matches ``expected`` (one atomic script).

        Compares id, modified_at, version, state, kind, relationship and owner;
        a session with a live lease counts as changed (checked in the same script).
        Returns True when it deleted, False (changing nothing) otherwise.
        """
        validate_session_id(expected.id)
        return self._delete(expected.id, expected)

    def _delete(self, session_id: str, expected: SessionMeta | None) -> bool:
        k = self._c.keys
        if expected is None:
            condition = ["0", "", "", "", ""]
        else:
            condition = [
                "1",
                str(expected.version),
                str(clock.to_ns(expected.modified_at) // 1_000),
                keys.meta_compared(expected),
                keys.ns20(clock.now_ns()),
            ]
        with self._c.guard():
            done = self._c.delete(
                keys=[
                    k.session(session_id),
                    k.events(session_id),
                    k.generation(session_id),
                    k.audit(session_id),
                    k.page_index,
                    k.age_index,
                    k.inventory_generation,
                    k.audit_ids,
                    k.lease(session_id),
                ],
                args=[self._c.prefix, session_id, *condition],
            )
        return bool(int(done))
