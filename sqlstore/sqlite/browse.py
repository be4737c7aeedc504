"""Read-only queries for the viewer (``sqlstore ui``) about sessions: the filtered
listing, counts by state and kind, one inventory row, and children
(:mod:`sqlstore.sqlite.browse_records` has the record and tool-call queries).

The ports answer "give me this session / these records"; a viewer also needs
"which sessions match these filters, newest first, from here", "when was each
record written" and "how do tools behave store-wide", which only the backend's
SQL can answer without loading every snapshot. Everything here is a short read
transaction on a pooled reader connection (``Database.read``); nothing writes.

Listing is keyset-paged on ``(modified_at_ns DESC, id ASC)``, the order of
``sessions.page``, through the ``sessions_by_modified`` index. A listing cursor
(:class:`ListPosition`) names the last row shown; unlike a ``sessions.page``
cursor it is never invalidated by writes: a session written while an operator
pages moves to the top and may be skipped or shown twice, which a viewer can live
with (a reload shows the current order).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import apsw

from sqlstore import clock
from sqlstore.inventory import SessionMeta
from sqlstore.sqlite import rows
from sqlstore.sqlite.database import Database

LABEL_KEY_MAX_CHARS = 200
"""Longest label key a filter accepts."""

WALK_MIN_MATCHES = 500
"""From this many matching sessions on, a page walks the listing index and stops
after one page (a 1-in-200 match rate reads ~10,000 index rows at most); below it,
the matches are fetched through ``sessions_by_state_kind`` and sorted. Without
table statistics (a read-only viewer cannot ANALYZE) SQLite always picks the
second plan, which on 20,000 matches of 100,000 took 420 ms instead of 0.2 ms."""


class BadListCursor(ValueError):
    """A listing cursor that does not decode (the viewer restarts from the newest row)."""


@dataclass(frozen=True, slots=True)
class ListPosition:
    """A row of the listing order: (modified_at_ns, id)."""

    modified_at_ns: int
    session_id: str

    def encode(self) -> str:
        """Return the position as an opaque URL-safe token."""
        doc = json.dumps([self.modified_at_ns, self.session_id], ensure_ascii=False)
        return base64.urlsafe_b64encode(doc.encode("utf-8")).rstrip(b"=").decode("ascii")

    @classmethod
    def decode(cls, token: str) -> ListPosition:
        """Parse a token made by :meth:`encode`.

        Raises:
            BadListCursor: the token is not one.
        """
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            mtime, sid = json.loads(raw.decode("utf-8"))
        except (binascii.Error, ValueError, UnicodeDecodeError, TypeError):
            raise BadListCursor("listing cursor does not decode") from None
        if not isinstance(mtime, int) or not isinstance(sid, str):
            raise BadListCursor("listing cursor has the wrong shape")
        return cls(mtime, sid)


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """What the session list shows; empty fields do not filter."""

    states: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    owner: str = ""
    label_key: str = ""
    label_value: str = ""
    text: str = ""
    modified_after: datetime | None = None
    modified_before: datetime | None = None

    def active(self) -> bool:
        """Return True when any field filters."""
        return bool(self.where()[0])

    def where(self, *, walk: bool = False) -> tuple[list[str], list[object]]:
        """Return the SQL conditions and their parameters.

        ``walk``: write the state and kind terms so that SQLite cannot use an index
        for them (a unary ``+``), and so walks ``sessions_by_modified`` in listing
        order, stopping after one page, instead of fetching every match through
        ``sessions_by_state_kind`` and sorting them (see :data:`WALK_MIN_MATCHES`).
        """
        conds: list[str] = []
        args: list[object] = []
        plus = "+" if walk else ""
        if self.states:
            conds.append(f"{plus}state IN ({', '.join('?' * len(self.states))})")
            args += self.states
        if self.kinds:
            conds.append(f"{plus}kind IN ({', '.join('?' * len(self.kinds))})")
            args += self.kinds
        if self.owner:
            conds.append("json_extract(owner, '$.subject') = ?")
            args.append(self.owner)
        if self.label_key:
            # The key is bound as a JSON path with the key quoted; '"' and '\' cannot be
            # quoted in a SQLite JSON path, so keys holding them match nothing.
            path = "$.labels." + json.dumps(self.label_key)
            # Labels live only in the snapshot: this filter reads every snapshot it
            # tests (seconds on 100,000 sessions); the others read the inventory.
            conds.append(
                "EXISTS (SELECT 1 FROM snapshots s WHERE s.id = sessions.id "
                "AND json_extract(CAST(s.body AS TEXT), ?) = ?)"
            )
            args += [path, self.label_value]
        if self.text:
            conds.append("(instr(lower(title), lower(?)) > 0 OR instr(id, ?) > 0)")
            args += [self.text, self.text]
        if self.modified_after is not None:
            conds.append("modified_at_ns >= ?")
            args.append(clock.to_ns(self.modified_after))
        if self.modified_before is not None:
            conds.append("modified_at_ns < ?")
            args.append(clock.to_ns(self.modified_before))
        return conds, args


@dataclass(frozen=True, slots=True)
class SessionList:
    """One page of the session list, with links both ways and the match count."""

    sessions: list[SessionMeta]
    newer: str | None  # token for the page before (newer rows), None on the first page
    older: str | None  # token for the page after (older rows), None on the last page
    matching: int


@dataclass(frozen=True, slots=True)
class StoreCounts:
    """Sessions in the whole store by state and by kind, as of an inventory generation."""

    total: int
    by_state: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    generation: int = -1


def _position(row: tuple[Any, ...]) -> str:
    return ListPosition(int(row[1]), str(row[0])).encode()


def list_sessions(
    db: Database,
    flt: SessionFilter,
    *,
    limit: int,
    older_than: str = "",
    newer_than: str = "",
    count: bool = True,
) -> SessionList:
    """Return up to ``limit`` matching rows after ``older_than`` (or before ``newer_than``).

    ``count=False`` skips counting the matches (``matching`` is then -1), for a caller
    that knows the number already (no filter: every session matches).

    Raises:
        BadListCursor: a token does not decode.
    """
    conds, args = flt.where()
    after = ListPosition.decode(older_than) if older_than else None
    before = ListPosition.decode(newer_than) if newer_than else None

    def read(conn: apsw.Connection) -> SessionList:
        base = " WHERE " + " AND ".join(conds) if conds else ""
        matching = -1
        if count:
            count_row = conn.execute(f"SELECT count(*) FROM sessions{base}", args).fetchone()
            matching = int(count_row[0]) if count_row else 0
        # Many matches: walk in listing order and stop early; few: seek them and sort.
        walk = matching < 0 or matching >= WALK_MIN_MATCHES
        page_conds, params = flt.where(walk=walk)
        if before is not None:
            page_conds.append("(modified_at_ns > ? OR (modified_at_ns = ? AND id < ?))")
            params += [before.modified_at_ns, before.modified_at_ns, before.session_id]
            order = "modified_at_ns ASC, id DESC"
        else:
            if after is not None:
                page_conds.append("(modified_at_ns < ? OR (modified_at_ns = ? AND id > ?))")
                params += [after.modified_at_ns, after.modified_at_ns, after.session_id]
            order = "modified_at_ns DESC, id ASC"
        where = " WHERE " + " AND ".join(page_conds) if page_conds else ""
        found = conn.execute(
            f"SELECT {rows.META_COLUMNS} FROM sessions{where} ORDER BY {order} LIMIT ?",
            [*params, limit + 1],
        ).fetchall()
        more = len(found) > limit
        shown = found[:limit]
        if before is not None:
            shown.reverse()
        metas = [rows.meta_from_row(r) for r in shown]
        # Positions from the raw rows: modified_at on SessionMeta has only microseconds.
        first = _position(shown[0]) if shown else None
        last = _position(shown[-1]) if shown else None
        if before is not None:
            return SessionList(metas, first if more else None, last or newer_than, matching)
        return SessionList(
            metas, first if after is not None else None, last if more else None, matching
        )

    return db.read(read)


def inventory_generation(db: Database) -> int:
    """Return the store's inventory generation.

    It changes with every snapshot save, create and delete — every write that can
    change a session's state or kind — so counts computed at one generation hold
    until it moves (event appends and audit records do not move it).
    """
    return db.read(rows.inventory_generation)


def store_counts(db: Database) -> StoreCounts:
    """Count the sessions of the store by state and kind (one index scan, one read transaction)."""

    def read(conn: apsw.Connection) -> StoreCounts:
        generation = rows.inventory_generation(conn)
        by_state: dict[str, int] = {}
        by_kind: dict[str, int] = {}
        total = 0
        for state, kind, n in conn.execute(
            "SELECT state, kind, count(*) FROM sessions GROUP BY state, kind"
        ):
            by_state[state] = by_state.get(state, 0) + n
            by_kind[kind] = by_kind.get(kind, 0) + n
            total += n
        return StoreCounts(
            total, dict(sorted(by_state.items())), dict(sorted(by_kind.items())), generation
        )

    return db.read(read)


def session_meta(db: Database, session_id: str) -> SessionMeta | None:
    """Return the inventory row of one session, or None."""

    def read(conn: apsw.Connection) -> SessionMeta | None:
        row = conn.execute(
            f"SELECT {rows.META_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        return None if row is None else rows.meta_from_row(row)

    return db.read(read)


def children(db: Database, session_id: str, *, limit: int) -> list[SessionMeta]:
    """Return up to ``limit`` sessions whose parent is ``session_id``, newest first."""

    def read(conn: apsw.Connection) -> list[SessionMeta]:
        found = conn.execute(
            # The kind condition matches the partial index sessions_by_parent exactly.
            f"SELECT {rows.META_COLUMNS} FROM sessions "
            "WHERE json_extract(relationship, '$.parent_session_id') = ? "
            "AND kind IN ('subagent', 'parallel_branch', 'team_member') "
            "ORDER BY modified_at_ns DESC, id ASC LIMIT ?",
            (session_id, limit),
        ).fetchall()
        return [rows.meta_from_row(r) for r in found]

    return db.read(read)
