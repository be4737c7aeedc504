"""Listing checkpoints in SQLite: the keyset ``WHERE`` and the one-statement document page.

``documents`` reads a page of checkpoints as one statement: SQLite itself
joins each checkpoint's stored body, the blobs its versions name, its
metadata and its pending writes (in LangGraph's order) into one JSON text
(see :mod:`sqlstore.checkpoint_documents`), so Python receives one string per
checkpoint and parses it once. The pieces are concatenated, not re-encoded:
``CASE`` turns the text into NULL when any piece is not ``JSON_TYPE`` data,
and the caller reads that checkpoint whole (every checkpoint of the page, when
a stored piece is not even UTF-8 text). Blob lookups run from the
checkpoint's ``versions`` (``json_each``) into the blob primary key
(``CROSS JOIN`` fixes that order: the other one scans all of the thread's
blobs for every checkpoint).
"""

from __future__ import annotations

from typing import Any

import apsw

from sqlstore.checkpoint_documents import CheckpointDocument, DocumentPage
from sqlstore.checkpoints import (
    EMPTY_BLOB_TYPE,
    JSON_TYPE,
    CheckpointKey,
    CheckpointQuery,
    metadata_matches,
)

ORDER = " ORDER BY checkpoint_id DESC, session_id DESC, ns DESC LIMIT ?"

PAGE_JOIN = (
    "page AS p CROSS JOIN checkpoints AS c ON c.session_id = p.session_id AND c.ns = p.ns "
    "AND c.checkpoint_id = p.checkpoint_id"
)
"""Join a ``page`` of keys to their rows (in no guaranteed order: add ``PAGE_ORDER``)."""

PAGE_ORDER = " ORDER BY c.checkpoint_id DESC, c.session_id DESC, c.ns DESC"

_J = f"'{JSON_TYPE}'"
_E = f"'{EMPTY_BLOB_TYPE}'"
_DOCUMENT = (
    f"'[' || CASE WHEN c.type = {_J} THEN c.body END || ',{{' || ("
    f"SELECT CASE WHEN max(b.type NOT IN ({_E}, {_J})) THEN NULL ELSE coalesce(group_concat("
    f"CASE WHEN b.type <> {_E} THEN json_quote(b.channel) || ':' || b.data END, ','), '') END "
    "FROM json_each(c.versions) AS v CROSS JOIN checkpoint_blobs AS b "
    "ON b.session_id = c.session_id AND b.ns = c.ns AND b.channel = v.key "
    "AND b.version = v.value"
    ") || '},' || c.metadata || ',[' || ("
    f"SELECT CASE WHEN max(w.type <> {_J}) THEN NULL ELSE coalesce(group_concat("
    "'[' || json_quote(w.task_id) || ',' || json_quote(w.channel) || ',' || w.data || ']', ',' "
    "ORDER BY w.task_path, w.task_id, w.idx), '') END "
    "FROM checkpoint_writes AS w WHERE w.session_id = c.session_id AND w.ns = c.ns "
    "AND w.checkpoint_id = c.checkpoint_id"
    ") || ']]'"
)
"""The JSON text of checkpoint ``c`` (NULL when a piece is not JSON-type data)."""


MERGED_NAMESPACES_MAX = 16
"""A thread listed across namespaces is read by one ordered scan per namespace up to
this many namespaces (merged by SQLite); beyond, its rows are sorted as a whole."""

_NAMESPACES = (
    "WITH RECURSIVE spaces(ns) AS (SELECT (SELECT min(ns) FROM checkpoints WHERE session_id = ?1) "
    "UNION ALL SELECT (SELECT min(ns) FROM checkpoints WHERE session_id = ?1 AND ns > spaces.ns) "
    "FROM spaces WHERE spaces.ns IS NOT NULL LIMIT ?2) SELECT ns FROM spaces WHERE ns IS NOT NULL"
)
"""The thread's namespaces by a skip scan of the primary key (one seek per namespace)."""


def page_keys(
    conn: apsw.Connection, query: CheckpointQuery, after: CheckpointKey | None, limit: int
) -> tuple[str, list[object]]:
    """Return a statement selecting one page's keys (session_id, ns, checkpoint_id), and its args.

    The keys come in listing order (checkpoint id, thread, ns: all descending).
    A thread's rows are read in primary-key order, one scan per namespace, so a
    page costs its own rows and not a sort of the whole thread.
    """
    spaces = None
    if query.thread_id is not None:
        spaces = [query.ns] if query.ns is not None else _namespaces(conn, query.thread_id)
    if spaces is None:
        clause, args = _where(query, after, None)
        keys = f"SELECT session_id, ns, checkpoint_id FROM checkpoints{clause}{ORDER}"
        return keys, [*args, limit]
    arms, args = [], []
    for ns in spaces:
        clause, arm_args = _where(query, after, ns)
        arms.append(
            "SELECT * FROM (SELECT session_id, ns, checkpoint_id FROM checkpoints"
            f"{clause} ORDER BY checkpoint_id DESC LIMIT ?)"
        )
        args += [*arm_args, limit]
    if not arms:
        return "SELECT session_id, ns, checkpoint_id FROM checkpoints WHERE 0", []
    return " UNION ALL ".join(arms) + ORDER, [*args, limit]


def _namespaces(conn: apsw.Connection, thread_id: str) -> list[str] | None:
    """Return the thread's namespaces, or None when there are too many to merge."""
    found = [ns for (ns,) in conn.execute(_NAMESPACES, (thread_id, MERGED_NAMESPACES_MAX + 1))]
    return None if len(found) > MERGED_NAMESPACES_MAX else found


def _where(
    query: CheckpointQuery, after: CheckpointKey | None, ns: str | None
) -> tuple[str, list[object]]:
    """Return the ``WHERE`` clause and its args; ``ns`` set: the scan of that one namespace."""
    terms: list[str] = []
    args: list[object] = []
    if query.thread_id is not None:
        terms.append("session_id = ?")
        args.append(query.thread_id)
    if ns is not None or query.ns is not None:
        terms.append("ns = ?")
        args.append(ns if ns is not None else query.ns)
    if query.checkpoint_id is not None:
        terms.append("checkpoint_id = ?")
        args.append(query.checkpoint_id)
    if query.before is not None:
        terms.append("checkpoint_id < ?")
        args.append(query.before)
    if after is not None and ns is not None and query.thread_id is not None:
        # (checkpoint_id, thread, ns) < after, with thread and ns fixed: a range on the id.
        after_id, after_thread, after_ns = after
        same_id_first = (query.thread_id, ns) < (after_thread, after_ns)
        terms.append("checkpoint_id <= ?" if same_id_first else "checkpoint_id < ?")
        args.append(after_id)
    elif after is not None:
        terms.append("(checkpoint_id, session_id, ns) < (?, ?, ?)")
        args.extend(after)
    return (" WHERE " + " AND ".join(terms) if terms else ""), args


def documents(
    conn: apsw.Connection, query: CheckpointQuery, after: CheckpointKey | None, limit: int
) -> DocumentPage:
    """Read one page of documents with one statement (filters applied to the raw metadata)."""
    keys, args = page_keys(conn, query, after, limit)

    def select(text: str) -> list[Any]:
        columns = f"c.checkpoint_id, c.session_id, c.ns, c.parent_id, {text}"
        if query.filter:
            columns += ", c.metadata"
        sql = f"WITH page AS MATERIALIZED ({keys}) SELECT {columns} FROM {PAGE_JOIN}"
        return conn.execute(sql, args).fetchall()

    try:
        rows = select(_DOCUMENT)
    except UnicodeDecodeError:
        # A stored piece is not UTF-8 (so not what the serializer wrote): no texts for
        # this page; the reader reads each checkpoint whole and learns which is bad.
        rows = select("NULL")
    # Sorted here, not by SQLite: its sorter would copy every text once more.
    rows.sort(key=lambda row: (row[0], row[1], row[2]), reverse=True)
    found = [
        CheckpointDocument(sid, ns, cid, parent, text)
        for cid, sid, ns, parent, text, *meta in rows
        if not meta or metadata_matches(meta[0], query.filter)
    ]
    last = rows[-1] if len(rows) == limit else None
    return DocumentPage(found, None if last is None else (last[0], last[1], last[2]))
