"""The viewer's listing queries on a real SQLite file: filtered keyset paging gives the
same rows in the same order with either plan (many matches walk the listing index,
few are sought and sorted), in both directions."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from sqlstore import Session, SQLiteStore, State, snapshot
from sqlstore.sqlite import browse, rows


def fill(path: Path, count: int, failed_every: int) -> list[str]:
    """Store ``count`` sessions (every ``failed_every``-th failed, equal times in runs of 3);
    return the failed ids in listing order (newest first, then id)."""
    with SQLiteStore(path) as store:

        def op(conn: apsw.Connection) -> None:
            for n in range(count):
                session = Session.new(f"s-{n:05d}")
                session.state = State.FAILED if n % failed_every == 0 else State.IDLE
                rows.put_snapshot(conn, session, snapshot.encode(session), 10**18 + n // 3)

        store.db.write(op)
    failed = [(10**18 + n // 3, f"s-{n:05d}") for n in range(count) if n % failed_every == 0]
    return [sid for _, sid in sorted(failed, key=lambda t: (-t[0], t[1]))]


def walk(db: object, flt: browse.SessionFilter, limit: int) -> tuple[list[str], list[str]]:
    """Page forwards to the end, then backwards to the start; return both id sequences."""
    forwards: list[list[str]] = []
    token = ""
    while True:
        page = browse.list_sessions(db, flt, limit=limit, older_than=token)  # type: ignore[arg-type]
        forwards.append([m.id for m in page.sessions])
        if page.older is None:
            break
        token = page.older
    backwards: list[list[str]] = [forwards[-1]]
    newer = browse.list_sessions(db, flt, limit=limit, older_than=token).newer if token else None  # type: ignore[arg-type]
    while newer:
        page = browse.list_sessions(db, flt, limit=limit, newer_than=newer)  # type: ignore[arg-type]
        backwards.append([m.id for m in page.sessions])
        newer = page.newer
    flat_back = [sid for page_ids in reversed(backwards) for sid in page_ids]
    return [sid for page_ids in forwards for sid in page_ids], flat_back


@pytest.mark.parametrize(("failed_every", "plan"), [(2, "walk"), (50, "seek")])
def test_filtered_paging_is_exact_with_either_plan(
    tmp_path: Path, failed_every: int, plan: str
) -> None:
    """Every failed session comes once, in listing order, forwards and backwards."""
    path = tmp_path / "s.db"
    expected = fill(path, 1_500, failed_every)
    assert (len(expected) >= browse.WALK_MIN_MATCHES) == (plan == "walk")
    with SQLiteStore(path, readonly=True, create=False) as store:
        flt = browse.SessionFilter(states=("failed",))
        first = browse.list_sessions(store.db, flt, limit=40)
        assert first.matching == len(expected)
        forwards, backwards = walk(store.db, flt, 40)
    assert forwards == expected
    assert backwards == expected
