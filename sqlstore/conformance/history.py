"""``SweepHistorySuite``: the record of retention sweeps (``store.history``).

Pins :class:`sqlstore.ports.SweepHistory`: ids grow from 1, ``list`` returns
the newest first, every field round-trips (times to the microsecond), and the
records belong to the store's shared state (a second handle sees them).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sqlstore.conformance.base import SuiteBase
from sqlstore.history import RunRecord
from sqlstore.ports import Store, SweepHistory, history_of

T0 = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


def history(store: Store) -> SweepHistory:
    """The store's sweep history (the suite fails when the backend has none)."""
    found = history_of(store)
    assert found is not None, "store.history is missing"
    return found


def run(index: int, **changes: object) -> RunRecord:
    """The ``index``-th sweep record of the tests."""
    fields: dict[str, object] = {
        "started_at": T0 + timedelta(minutes=index),
        "ended_at": T0 + timedelta(minutes=index, seconds=3),
        "policy_hash": f"policy-{index}",
        "planned": 10 + index,
        "deleted": index,
        "changed": 1,
        "failed": 0,
        "dry_run": False,
        "detail": '{"leased":0}',
    }
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type]


class SweepHistorySuite(SuiteBase):
    """Every backend keeps sweep records alike."""

    __test__ = False

    def test_history_starts_empty(self, store: Store) -> None:
        """A new store has no sweep records."""
        assert history(store).list(10) == []

    def test_history_ids_grow_from_one(self, store: Store) -> None:
        """Stored records get ids 1, 2, 3 and come back otherwise unchanged."""
        stored = [history(store).record(run(i)) for i in range(3)]
        assert [r.id for r in stored] == [1, 2, 3]
        assert [r for r in stored] == [run(i, id=i + 1) for i in range(3)]

    def test_history_lists_newest_first_up_to_limit(self, store: Store) -> None:
        """``list(limit)`` returns the newest records first, at most ``limit``."""
        for i in range(5):
            history(store).record(run(i))
        assert [r.id for r in history(store).list(3)] == [5, 4, 3]
        assert [r.id for r in history(store).list(50)] == [5, 4, 3, 2, 1]

    def test_history_round_trips_every_field(self, store: Store) -> None:
        """Times (to the microsecond), counts, the dry-run flag and the detail read back equal."""
        rec = run(7, dry_run=True, failed=2, detail='{"errors":["a\\u00e9"]}')
        history(store).record(rec)
        (got,) = history(store).list(1)
        assert got == run(7, dry_run=True, failed=2, detail='{"errors":["a\\u00e9"]}', id=1)

    def test_history_limit_must_be_positive(self, store: Store) -> None:
        """A limit of 0 or less raises ``ValueError``."""
        with pytest.raises(ValueError):
            history(store).list(0)

    def test_history_is_seen_by_a_second_handle(self, pair: tuple[Store, Store]) -> None:
        """Records written through one handle are listed by the other, ids continuing."""
        first, second = pair
        history(first).record(run(0))
        assert [r.id for r in history(second).list(5)] == [1]
        assert history(second).record(run(1)).id == 2
        assert [r.id for r in history(first).list(5)] == [2, 1]
