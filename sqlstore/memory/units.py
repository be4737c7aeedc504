"""Units of work in memory: ``store.apply``, ``append_events`` and conditional ``save``.

A unit runs under the store's one lock, so its version check and every write
of it happen together; input was validated and encoded before (by
:func:`sqlstore.changes.prepare`), so nothing can fail half-way. See
:mod:`sqlstore.changes` for the version rules.
"""

from __future__ import annotations

from dataclasses import replace

from sqlstore import clock
from sqlstore.changes import Applied, ChangeSet, check_version
from sqlstore.cursor import encode_cursor, new_generation
from sqlstore.memory.state import Log, MemoryState
from sqlstore.tail import RawRecord


def apply_changes(state: MemoryState, changes: ChangeSet) -> Applied:
    """Write one unit under the lock: conditional, all of it or nothing.

    Raises:
        VersionConflict: the stored version does not meet ``expected_version``.
        StoreClosed: the store is closed.
    """
    session_id = changes.session_id
    now_ns = clock.now_ns()
    with state.lock:
        state.check_open()
        stored = state.sessions.get(session_id)
        current = None if stored is None else stored.meta.version
        check_version(session_id, changes.expected_version, current)
        if changes.empty:
            return Applied(current or 0, [])
        cursors: list[str] = []
        if changes.events:
            log = state.logs.get(session_id)
            if log is None:
                log = state.logs[session_id] = Log(new_generation())
            for event in changes.events:
                pos = len(log.records) + 1
                log.records.append(RawRecord(pos, False, event.body))
                cursors.append(encode_cursor(session_id, log.generation, pos))
        if changes.audit:
            trail = state.audit.setdefault(session_id, [])
            at = clock.from_ns(now_ns)
            for rec in changes.audit:
                trail.append((next(state.audit_order), rec if rec.at else replace(rec, at=at)))
        state.merge_scopes(changes.scopes)
        if changes.snapshot is not None:
            assert changes.blob is not None
            version = state.put(changes.snapshot, changes.blob, now_ns)
        elif changes.events or changes.audit:
            version = state.touch(session_id, now_ns) or 0
        else:
            version = current or 0  # scoped state only: the session is not written
        if changes.events:
            state.notify()
        return Applied(version, cursors)
