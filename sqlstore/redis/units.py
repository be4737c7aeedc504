"""Units of work in Redis: ``store.apply``, ``append_events`` and conditional ``save``.

A unit is one Lua script (``scripts.APPLY``): Redis runs it to completion without
interleaving other commands, so the version check and every write of the unit
happen together or not at all. The script is flagged for writes, so at
``maxmemory`` Redis refuses it before it starts (``StoreFull``, nothing written).
See :mod:`sqlstore.changes` for the version rules.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlstore import clock
from sqlstore.changes import Applied, ChangeSet
from sqlstore.cursor import CursorEncoder, new_generation
from sqlstore.errors import VersionConflict
from sqlstore.jsonl import canonical_json
from sqlstore.redis import keys
from sqlstore.redis.connection import Connection


def scope_args(k: keys.Keys, deltas: dict[str, dict[str, str]]) -> list[str]:
    """Return the script's scoped-state arguments: the count, then 4 per key of a delta."""
    out = [str(sum(len(delta) for delta in deltas.values()))]
    for scope, delta in deltas.items():
        for key, text in delta.items():
            out.extend((k.scope(scope), scope, key, text))
    return out


def apply_unit(conn: Connection, changes: ChangeSet) -> Applied:
    """Run one unit of work as one script and return its outcome.

    Raises:
        VersionConflict: the stored version does not meet ``expected_version``.
        StoreUnavailable, StoreFull: the script did not run; nothing written.
    """
    sid = changes.session_id
    now_ns = clock.now_ns()
    k = conn.keys
    snap = changes.snapshot
    args: list[Any] = [
        "" if changes.expected_version is None else str(changes.expected_version),
        new_generation(),
        str(now_ns),
        keys.page_prefix(now_ns),
        keys.age_prefix(now_ns),
        keys.hex_id(sid),
        conn.prefix,
        sid,
        "0" if snap is None else "1",
        b"" if changes.blob is None else changes.blob,
        "" if snap is None or changes.blob is None else keys.meta_json(snap, changes.blob),
        "" if snap is None else keys.session_compared(snap),
        "" if snap is None else keys.owner_scope(snap),
        str(len(changes.events)),
        str(len(changes.audit)),
    ]
    args.extend(event.body for event in changes.events)
    at = clock.from_ns(now_ns)
    args.extend(
        canonical_json((rec if rec.at is not None else replace(rec, at=at)).to_json())
        for rec in changes.audit
    )
    args.extend(scope_args(k, changes.scopes))
    with conn.guard():
        reply: list[Any] = conn.apply(
            keys=[
                k.session(sid),
                k.events(sid),
                k.generation(sid),
                k.audit(sid),
                k.audit_ids,
                k.audit_seq,
                k.page_index,
                k.age_index,
                k.write_seq,
                k.inventory_generation,
            ],
            args=args,
        )
    if reply[0] == b"conflict":
        stored = int(reply[1]) if reply[1] else None
        assert changes.expected_version is not None
        raise VersionConflict(sid, expected_version=changes.expected_version, stored_version=stored)
    _, version, generation, first = reply
    cursors: list[str] = []
    if changes.events:
        encoder = CursorEncoder(sid, generation.decode())
        cursors = [encoder(pos) for pos in range(int(first), int(first) + len(changes.events))]
    return Applied(int(version), cursors)
