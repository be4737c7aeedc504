"""Snapshots and inventory in SQLite (``SQLiteStore.sessions``)."""

from __future__ import annotations

import builtins
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from sqlstore import clock, snapshot
from sqlstore.changes import prepare_save
from sqlstore.errors import MetadataCursorRestart, SessionAlreadyExists, SessionNotFound
from sqlstore.fold import load_or_fold
from sqlstore.inventory import Page, SessionMeta, StoredSession, rows_match
from sqlstore.jsonl import canonical_json
from sqlstore.model import Principal, Relationship, validate_session_id
from sqlstore.pager import PagerPosition, decode_pager_cursor, encode_pager_cursor, scope_key
from sqlstore.session import Session
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database
from sqlstore.sqlite.units import apply_changes

if TYPE_CHECKING:
    from sqlstore.sqlite.events import SQLiteEvents

ITER_META_PAGE_ROWS = 1_000
"""Inventory rows read per short transaction by ``iter_meta``."""


class SQLiteSessions:
    """Session snapshots, listing, paging and (conditional) deletion."""

    def __init__(self, db: Database, events: SQLiteEvents) -> None:
        self._db = db
        self._events = events

    def save(self, session: Session, *, expected_version: int | None = None) -> int:
        """Replace the snapshot durably and return its new version (``modified_at`` bumped).

        With ``expected_version`` the save is conditional, checked in the write
        transaction itself: the stored version must equal it (``0``: no snapshot
        may be stored yet), else nothing changes (see :mod:`sqlstore.changes`).

        Raises:
            VersionConflict: the stored version differs, or the session is missing.
            SnapshotError: the session cannot be encoded.
            StoreBusy: the write lock was not free within the busy timeout.
        """
        changes = prepare_save(session, expected_version)
        return self._db.write(lambda conn: apply_changes(conn, changes).version)

    def load_versioned(self, session_id: str) -> tuple[Session, int]:
        """Return the snapshot and its version, read together in one statement.

        Pass the version to ``save(..., expected_version=)`` or ``store.apply`` to
        write only if nobody wrote the session since.

        Raises:
            SessionNotFound: no snapshot under the id.
        """
        validate_session_id(session_id)
        with self._db.reader() as conn:
            row = conn.execute(
                "SELECT s.body, m.version FROM snapshots AS s JOIN sessions AS m ON m.id = s.id "
                "WHERE s.id = ?",
                (session_id,),
            ).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(row[0]), int(row[1])

    def create(self, session: Session) -> None:
        """Store the snapshot only if the id has none (atomic across processes).

        Raises:
            SessionAlreadyExists: a snapshot exists; nothing was changed.
        """
        blob = snapshot.encode(session)

        def op(conn: apsw.Connection) -> None:
            if rows.session_exists(conn, session.id):
                raise SessionAlreadyExists(session.id)
            rows.put_snapshot(conn, session, blob, clock.now_ns())

        self._db.write(op)

    def load(self, session_id: str) -> Session:
        """Return an independent copy of the snapshot.

        Raises:
            SessionNotFound: no snapshot under the id (the message names it).
        """
        validate_session_id(session_id)
        with self._db.reader() as conn:
            row = conn.execute("SELECT body FROM snapshots WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return snapshot.decode(row[0])

    def load_or_fold(self, session_id: str, seed: object) -> Session:
        """Return the snapshot, or fold the event log with ``seed`` when there is none."""
        return load_or_fold(self, self._events, session_id, seed)

    def list(self) -> builtins.list[StoredSession]:
        """Return every session with its modification time (no snapshot is decoded)."""
        with self._db.reader() as conn:
            return [
                StoredSession(sid, clock.from_ns(mtime))
                for sid, mtime in conn.execute("SELECT id, modified_at_ns FROM sessions")
            ]

    def meta(self, session_id: str) -> SessionMeta:
        """Return one inventory row.

        Raises:
            SessionNotFound: no snapshot under the id.
        """
        validate_session_id(session_id)
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {rows.META_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        return rows.meta_from_row(row)

    def iter_meta(self) -> Iterator[SessionMeta]:
        """Yield every inventory row oldest first by (modified_at, id), a page at a time.

        Memory stays bounded whatever the store's size; no transaction is held
        between pages, so rows written meanwhile may or may not be seen.
        """
        after: tuple[int, str] | None = None
        while True:
            found: builtins.list[tuple[Any, ...]]
            with self._db.reader() as conn:
                if after is None:
                    found = conn.execute(
                        f"SELECT {rows.META_COLUMNS} FROM sessions "
                        "ORDER BY modified_at_ns, id LIMIT ?",
                        (ITER_META_PAGE_ROWS,),
                    ).fetchall()
                else:
                    found = conn.execute(
                        f"SELECT {rows.META_COLUMNS} FROM sessions "
                        "WHERE (modified_at_ns, id) > (?, ?) "
                        "ORDER BY modified_at_ns, id LIMIT ?",
                        (*after, ITER_META_PAGE_ROWS),
                    ).fetchall()
            if not found:
                return
            for row in found:
                yield rows.meta_from_row(row)
            after = (int(found[-1][1]), str(found[-1][0]))

    def page(
        self,
        limit: int,
        cursor: str | None = None,
        *,
        owner: Principal | None = None,
        enforce_owner: bool = False,
    ) -> Page:
        """Return one page of inventory rows, modified_at DESC then id ASC.

        With ``enforce_owner`` only sessions whose owner shares (issuer, subject)
        with ``owner`` are counted and returned (``owner=None`` selects nothing).

        Raises:
            MetadataCursorRestart: the cursor is from another scope, an older
                inventory generation, or does not decode.
            ValueError: ``limit`` is not positive.
        """
        if limit <= 0:
            raise ValueError("limit must be > 0")
        scope = scope_key(owner, enforce_owner)
        where = ""
        args: list[object] = []
        if enforce_owner:
            where = "owner_key = ?"
            args.append(scope if owner is not None else None)

        def read(conn: apsw.Connection) -> Page:
            generation = rows.inventory_generation(conn)
            count_sql = "SELECT count(*) FROM sessions" + (f" WHERE {where}" if where else "")
            total_row = conn.execute(count_sql, args).fetchone()
            total = int(total_row[0]) if total_row else 0
            conditions = [where] if where else []
            params = list(args)
            if cursor:
                pos = decode_pager_cursor(cursor, scope, generation)
                anchor = conn.execute(
                    "SELECT 1 FROM sessions WHERE id = ? AND modified_at_ns = ?",
                    (pos.session_id, pos.modified_at_ns),
                ).fetchone()
                if anchor is None:
                    raise MetadataCursorRestart("the page cursor's row is gone or has moved")
                conditions.append("(modified_at_ns < ? OR (modified_at_ns = ? AND id > ?))")
                params += [pos.modified_at_ns, pos.modified_at_ns, pos.session_id]
            sql = f"SELECT {rows.META_COLUMNS} FROM sessions"
            if conditions:
                sql += " WHERE " + " AND ".join(conditions)
            sql += " ORDER BY modified_at_ns DESC, id ASC LIMIT ?"
            found: builtins.list[tuple[Any, ...]] = conn.execute(
                sql, [*params, limit + 1]
            ).fetchall()
            metas = [rows.meta_from_row(r) for r in found[:limit]]
            next_cursor = None
            if len(found) > limit:
                last = found[limit - 1]
                next_cursor = encode_pager_cursor(
                    PagerPosition(scope, generation, int(last[1]), str(last[0]))
                )
            return Page(sessions=metas, next_cursor=next_cursor, total=total)

        return self._db.read(read)

    def delete(self, session_id: str) -> None:
        """Remove snapshot, events and audit rows in one transaction; idempotent."""
        validate_session_id(session_id)
        self._db.write(lambda conn: rows.delete_session_rows(conn, session_id))

    def delete_if_unchanged(self, expected: SessionMeta) -> bool:
        """Delete the session only if its row still matches ``expected`` (one transaction).

        Compares id, modified_at, version, state, kind, relationship and owner.
        A session with a live lease counts as changed (the lease holder is working
        on it), checked in the same transaction. Returns True when it deleted,
        False (changing nothing) otherwise.
        """
        validate_session_id(expected.id)
        return self._db.write(lambda conn: _delete_if_unchanged(conn, expected))

    def delete_many_if_unchanged(
        self,
        expected: Sequence[SessionMeta],
        *,
        budget_s: float | None = None,
        timer: Callable[[], float] = time.monotonic,
    ) -> builtins.list[bool]:
        """Run :meth:`delete_if_unchanged` on each row in order, all in one transaction.

        Each row is checked and deleted exactly as by :meth:`delete_if_unchanged`
        (same comparison, same lease check, inside the same transaction as its
        delete); one commit covers them all. With ``budget_s`` the transaction
        stops taking new rows once that many seconds (read from ``timer``) have
        passed since it began, after at least one row: the write lock is then held
        for about the budget plus one deletion and the commit. Returns one
        outcome per row handled, in order — a prefix of ``expected``; the rest
        were not looked at. An error rolls back the whole transaction.

        Raises:
            StoreBusy: the write lock was not free within the busy timeout.
            StoreError: the transaction failed; nothing was deleted.
        """
        for meta in expected:
            validate_session_id(meta.id)

        def op(conn: apsw.Connection) -> builtins.list[bool]:
            began = timer()
            outcomes: builtins.list[bool] = []
            for meta in expected:
                if outcomes and budget_s is not None and timer() - began >= budget_s:
                    break
                outcomes.append(_delete_if_unchanged(conn, meta))
            return outcomes

        return self._db.write(op) if expected else []


_MATCH_COLUMNS = "modified_at_ns, version, state, kind, relationship, owner"


@functools.lru_cache(maxsize=1024)
def _canonical_of(value: Relationship | Principal) -> str:
    """Return the canonical JSON the store writes for ``value`` (cached: many rows share one)."""
    return canonical_json(value.to_json())


def _row_matches(row: tuple[Any, ...], expected: SessionMeta) -> bool:
    """True when a ``_MATCH_COLUMNS`` row holds what ``rows_match`` compares in ``expected``.

    Same answer as ``rows_match(rows.meta_from_row(...), expected)``, cheaper: the
    plain columns are compared first, and the JSON columns as text against the
    canonical encoding the store writes, decoding them only when the text differs.
    """
    mtime, version, state, kind, rel, owner = row
    if (
        version != expected.version
        or state != str(expected.state)
        or kind != str(expected.kind)
        or clock.from_ns(mtime) != expected.modified_at
    ):
        return False
    owner_json = None if expected.owner is None else _canonical_of(expected.owner)
    if rel == _canonical_of(expected.relationship) and owner == owner_json:
        return True
    full = _meta_for_match(expected.id, row)
    return rows_match(full, expected)


def _meta_for_match(session_id: str, row: tuple[Any, ...]) -> SessionMeta:
    """Decode the compared fields of a ``_MATCH_COLUMNS`` row (the rest are placeholders)."""
    mtime, version, state, kind, rel, owner = row
    return rows.meta_from_row(
        (session_id, mtime, version, state, kind, rel, owner, mtime, "", "", 0, 0)
    )


def _delete_if_unchanged(conn: apsw.Connection, expected: SessionMeta) -> bool:
    """Delete one session inside the caller's write transaction if its row is unchanged."""
    row = conn.execute(
        f"SELECT {_MATCH_COLUMNS} FROM sessions WHERE id = ?", (expected.id,)
    ).fetchone()
    if row is None or not _row_matches(row, expected):
        return False
    leased = conn.execute(
        "SELECT 1 FROM leases WHERE name = ? AND owner IS NOT NULL AND expires_at_ns > ?",
        (expected.id, clock.now_ns()),
    ).fetchone()
    if leased is not None:
        return False
    rows.delete_session_rows(conn, expected.id)
    return True
