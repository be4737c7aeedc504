"""The retention planner: candidates, protections, age and cap passes, ordering, generation."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time
from test_retention_support import BACKENDS, T0, meta, opened_store, put

from retention import Plan, Policy, Rule, plan, plan_rows
from sqlstore import Kind, Principal, Relationship, SessionMeta, State
from sqlstore.ports import Store

DAY = timedelta(days=1)
CHILD_AGE = Policy(child=Rule(max_age=7 * DAY))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store of each backend."""
    with opened_store(str(request.param), tmp_path / "sessions.db") as opened:
        yield opened


def ids(result: Plan) -> list[str]:
    """Return the planned ids in plan order."""
    return [entry.meta.id for entry in result.entries]


def reasons(result: Plan) -> dict[str, str]:
    """Return id → reason of a plan."""
    return {entry.meta.id: entry.reason for entry in result.entries}


@pytest.mark.parametrize("state", [State.IDLE, State.COMPLETED, State.FAILED, State.CANCELLED])
def test_candidate_states_are_selected(state: State) -> None:
    """Idle, completed, failed and cancelled stale sessions are selected for age."""
    result = plan_rows([meta("a", 8 * DAY, state=state)], CHILD_AGE, T0)
    assert reasons(result) == {"a": "age"}


@pytest.mark.parametrize(
    ("row", "protected", "leased", "why"),
    [
        (meta("a", 99 * DAY, state=State.RUNNING), (), (), "active_state"),
        (meta("a", 99 * DAY, state=State.AWAITING), (), (), "active_state"),
        (meta("a", 99 * DAY, kind=Kind.UNKNOWN), (), (), "unknown_kind"),
        (meta("a", 99 * DAY), ("a",), (), "protected"),
        (meta("a", 99 * DAY), (), ("a",), "leased"),
    ],
)
def test_protections_are_never_selected(
    row: SessionMeta, protected: tuple[str, ...], leased: tuple[str, ...], why: str
) -> None:
    """Running, awaiting, unknown-kind, protected and leased rows are never selected."""
    everything = Policy(
        main=Rule(max_age=DAY, max_count=0),
        scheduled=Rule(max_age=DAY),
        child=Rule(max_age=DAY),
        acknowledge_main_deletion=True,
    )
    result = plan_rows([row], everything, T0, protected, leased=leased)
    assert result.entries == []
    assert result.protected == {why: 1}


def test_invalid_taxonomy_is_protected() -> None:
    """A row whose relationship does not fit its kind, or with an unknown state, is protected."""
    bad_rel = replace(meta("a", 99 * DAY), relationship=Relationship())
    bad_state = replace(meta("b", 99 * DAY), state="zombie")  # type: ignore[arg-type]
    result = plan_rows([bad_rel, bad_state], CHILD_AGE, T0)
    assert result.entries == []
    assert result.protected == {"unknown_kind": 2}


def test_age_boundary_is_strict() -> None:
    """A row modified exactly max_age ago is kept; one microsecond older is selected."""
    exact = meta("exact", 7 * DAY)
    older = meta("older", 7 * DAY + timedelta(microseconds=1))
    assert ids(plan_rows([exact, older], CHILD_AGE, T0)) == ["older"]


def test_off_rules_select_nothing() -> None:
    """With every rule off nothing is selected, however old."""
    rows = [meta(f"s{i}", 1000 * DAY, kind=k) for i, k in enumerate(Kind)]
    assert plan_rows(rows, Policy(), T0).entries == []


def test_rules_apply_per_kind_class() -> None:
    """main, scheduled and child rows follow their own rule."""
    policy = Policy(
        main=Rule(max_age=30 * DAY),
        scheduled=Rule(max_age=7 * DAY),
        child=Rule(max_age=DAY),
        acknowledge_main_deletion=True,
    )
    rows = [
        meta("main-10d", 10 * DAY, kind=Kind.MAIN),
        meta("main-31d", 31 * DAY, kind=Kind.MAIN),
        meta("sched-6d", 6 * DAY, kind=Kind.SCHEDULED),
        meta("sched-8d", 8 * DAY, kind=Kind.SCHEDULED),
        meta("sub-2d", 2 * DAY, kind=Kind.SUBAGENT),
        meta("branch-2d", 2 * DAY, kind=Kind.PARALLEL_BRANCH),
        meta("member-2d", 2 * DAY, kind=Kind.TEAM_MEMBER),
        meta("member-1h", timedelta(hours=1), kind=Kind.TEAM_MEMBER),
    ]
    result = plan_rows(rows, policy, T0)
    assert sorted(ids(result)) == sorted(
        ["main-31d", "sched-8d", "sub-2d", "branch-2d", "member-2d"]
    )
    assert result.counts.by_kind == {
        "main": 1,
        "scheduled": 1,
        "subagent": 1,
        "parallel_branch": 1,
        "team_member": 1,
    }


def test_cap_keeps_newest_max_count() -> None:
    """Above max_count the oldest excess candidates are selected with reason cap."""
    rows = [meta(f"s{i}", i * timedelta(minutes=1)) for i in range(10)]
    result = plan_rows(rows, Policy(child=Rule(max_count=3)), T0)
    assert ids(result) == ["s9", "s8", "s7", "s6", "s5", "s4", "s3"]
    assert set(reasons(result).values()) == {"cap"}


def test_age_runs_before_cap() -> None:
    """Age-selected rows do not count toward the cap; the cap then trims the survivors."""
    rows = [meta(f"old{i}", (10 + i) * DAY) for i in range(3)]
    rows += [meta(f"new{i}", i * timedelta(hours=1)) for i in range(4)]
    result = plan_rows(rows, Policy(child=Rule(max_age=7 * DAY, max_count=2)), T0)
    assert reasons(result) == {
        "old0": "age",
        "old1": "age",
        "old2": "age",
        "new3": "cap",
        "new2": "cap",
    }
    assert result.counts.by_reason == {"age": 3, "cap": 2}


def test_cap_is_per_family() -> None:
    """Each child kind is capped on its own, not across the child class."""
    rows = [
        meta(f"{kind}-{i}", i * timedelta(minutes=1), kind=kind)
        for kind in (Kind.SUBAGENT, Kind.PARALLEL_BRANCH, Kind.TEAM_MEMBER)
        for i in range(3)
    ]
    result = plan_rows(rows, Policy(child=Rule(max_count=2)), T0)
    assert sorted(ids(result)) == ["parallel_branch-2", "subagent-2", "team_member-2"]


def test_cap_counts_candidates_only() -> None:
    """Active and protected sessions neither count toward the cap nor get selected."""
    rows = [
        meta("running", 5 * DAY, state=State.RUNNING),
        meta("leased", 4 * DAY),
        meta("a", 3 * DAY),
        meta("b", 2 * DAY),
        meta("c", 1 * DAY),
    ]
    result = plan_rows(rows, Policy(child=Rule(max_count=2)), T0, leased={"leased"})
    assert ids(result) == ["a"]


def test_ties_break_by_id() -> None:
    """Rows with the same modified_at are ordered by id, and the cap takes the smaller id first."""
    rows = [meta(sid, DAY) for sid in ("c", "a", "b", "é", "Z")]
    result = plan_rows(rows, Policy(child=Rule(max_count=2)), T0)
    assert ids(result) == ["Z", "a", "b"]
    aged = plan_rows(rows, Policy(child=Rule(max_age=timedelta(hours=1))), T0)
    assert ids(aged) == ["Z", "a", "b", "c", "é"]


def test_entries_sorted_oldest_first_across_kinds() -> None:
    """The plan lists entries oldest first by (modified_at, id) across all partitions."""
    rows = [
        meta("x", 9 * DAY, kind=Kind.TEAM_MEMBER),
        meta("y", 12 * DAY, kind=Kind.SUBAGENT),
        meta("z", 10 * DAY, kind=Kind.PARALLEL_BRANCH),
    ]
    assert ids(plan_rows(rows, CHILD_AGE, T0)) == ["y", "z", "x"]


def test_input_order_does_not_matter() -> None:
    """Shuffled input gives the same entries and the same generation."""
    rows = [meta(f"s{i:03d}", (i % 17) * DAY, kind=Kind.SUBAGENT) for i in range(200)]
    policy = Policy(child=Rule(max_age=10 * DAY, max_count=40))
    expected = plan_rows(rows, policy, T0)
    for seed in range(5):
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        again = plan_rows(shuffled, policy, T0)
        assert again.entries == expected.entries
        assert again.generation == expected.generation


def test_generation_tracks_rows_policy_and_protection() -> None:
    """The generation changes with any row version, the policy or a protection."""
    rows = [meta("a", 8 * DAY), meta("b", DAY)]
    base = plan_rows(rows, CHILD_AGE, T0).generation
    assert plan_rows(rows, CHILD_AGE, T0 + DAY).generation == base
    bumped = [rows[0], replace(rows[1], version=2)]
    assert plan_rows(bumped, CHILD_AGE, T0).generation != base
    assert plan_rows(rows, Policy(child=Rule(max_age=6 * DAY)), T0).generation != base
    assert plan_rows(rows, CHILD_AGE, T0, ("b",)).generation != base
    assert plan_rows(rows, CHILD_AGE, T0, leased={"b"}).generation != base
    assert plan_rows(rows, CHILD_AGE, T0, ("not-a-row",)).generation == base


def test_counts_by_kind_state_reason() -> None:
    """Plan.counts tallies entries by kind, state and reason."""
    rows = [
        meta("a", 8 * DAY, state=State.FAILED),
        meta("b", 9 * DAY, kind=Kind.TEAM_MEMBER, state=State.CANCELLED),
        meta("c", 9 * DAY, state=State.FAILED),
    ]
    counts = plan_rows(rows, CHILD_AGE, T0).counts
    assert counts.total == 3
    assert counts.by_kind == {"subagent": 2, "team_member": 1}
    assert counts.by_state == {"failed": 2, "cancelled": 1}
    assert counts.by_reason == {"age": 3}


def test_naive_now_is_refused() -> None:
    """plan_rows refuses a naive `now`."""
    with pytest.raises(ValueError, match="naive"):
        plan_rows([], CHILD_AGE, T0.replace(tzinfo=None))


def test_owner_is_irrelevant_to_selection() -> None:
    """Sessions of any owner are planned alike (retention runs for the whole store)."""
    owned = replace(meta("a", 8 * DAY), owner=Principal("i", "s"))
    assert ids(plan_rows([owned], CHILD_AGE, T0)) == ["a"]


def test_plan_reads_store_and_leases(store: Store) -> None:
    """plan() streams the store's inventory, protects leased ids and reads `now` at call time."""
    put(store, "old", T0 - 10 * DAY)
    put(store, "old-leased", T0 - 10 * DAY)
    put(store, "old-running", T0 - 10 * DAY, state=State.RUNNING)
    put(store, "fresh", T0 - DAY)
    with freeze_time(T0):
        store.leases.acquire("old-leased", "agent", timedelta(hours=1))
        result = plan(store, CHILD_AGE)
    assert ids(result) == ["old"]
    assert result.now == T0
    assert result.scanned == 4
    assert result.protected == {"leased": 1, "active_state": 1}
    with freeze_time(T0 + timedelta(minutes=30)):
        later = plan(store, CHILD_AGE, protected=("old",))
    assert ids(later) == []
    assert later.now == T0 + timedelta(minutes=30)
    with freeze_time(T0 + 2 * DAY):
        assert ids(plan(store, CHILD_AGE, now=T0 + 30 * DAY)) == ["old", "old-leased", "fresh"]


def test_expired_lease_no_longer_protects(store: Store) -> None:
    """Once a lease has expired, plan() selects its session again."""
    put(store, "s", T0 - 10 * DAY)
    with freeze_time(T0 - timedelta(hours=2)):
        store.leases.acquire("s", "agent", timedelta(hours=1))
    with freeze_time(T0):
        assert ids(plan(store, CHILD_AGE)) == ["s"]


def test_plan_to_json_lists_entries() -> None:
    """Plan.to_json carries generation, policy hash, counts and each entry's fields."""
    data = plan_rows([meta("a", 8 * DAY)], CHILD_AGE, T0).to_json()
    assert data["policy_hash"] == CHILD_AGE.policy_hash
    assert data["entries"] == [
        {
            "id": "a",
            "kind": "subagent",
            "state": "completed",
            "modified_at": "2025-12-24T00:00:00.000000Z",
            "version": 1,
            "reason": "age",
        }
    ]
    assert data["counts"]["total"] == 1


def test_rows_newer_than_the_planning_start_are_left_out(store: Store) -> None:
    """Rows last written after plan() started are neither planned nor counted."""
    put(store, "old", T0 - 10 * DAY)
    put(store, "later", T0 - DAY)
    with freeze_time(T0 - 5 * DAY):
        result = plan(store, Policy(child=Rule(max_count=1)), now=T0 + 30 * DAY)
    assert result.scanned == 1
    assert result.entries == []
    with freeze_time(T0):
        assert ids(plan(store, Policy(child=Rule(max_count=1)))) == ["old"]
