"""Power-loss simulation: record real workloads through a lossy VFS, cut power, check.

A ``kill -9`` cannot show a missing fsync (the kernel still writes the dead
process's dirty pages); these tests can. Each scenario runs in a child process
under :mod:`tests.reliability.lossy_vfs`, its trace is cut at ``CUTS`` points in
the eight ways of :data:`tests.reliability.powercut.MODES`, and every distinct
image is opened with the normal VFS in a fresh checker process and held to the
rules of :mod:`tests.reliability.powercut_rules`. The ``control-*`` workloads
break one rule on purpose: the same harness must report them, or it proves
nothing. ``docs/reliability.md`` describes the model and its limits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.reliability import powercut_rules as rules
from tests.reliability.powercut_harness import Outcome, Rule, record, run
from tests.reliability.powercut_rules import Timeline
from tests.reliability.powercut_workloads import make_runs

CUTS = int(os.environ.get("POWERCUT_CUTS", "200"))
"""Cut points per scenario in the default run (``POWERCUT_CUTS`` overrides)."""

DEEP_CUTS = 500
"""Cut points per scenario in the slow-marked deep run (every one, for shorter traces)."""
DEEP_DRAWS = 2
"""Draws of each random mode per cut point in the deep run."""


def durable(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """``durability="full"``: the state after the last acknowledged call (or the one in flight)."""
    return rules.sequential(tl, cut, result, base, durable=True)


def normal(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """``durability="normal"``: a lost suffix of calls since the last close, never a mix."""
    return rules.sequential(tl, cut, result, base, durable=False)


def threads(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Group commit: gap-free logs holding every acknowledged append; whole created sessions."""
    return rules.logs(tl, cut, result, base) + rules.creates(tl, cut, result)


def swept(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Retention: sessions whole or gone, reported deletions durable, appends kept."""
    return rules.whole_or_gone(tl, cut, result, base) + rules.logs(tl, cut, result, base)


def swept_normal(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Retention on a ``"normal"`` store: appends may lose a suffix, reported deletions may not."""
    return rules.whole_or_gone(tl, cut, result, base) + rules.logs(
        tl, cut, result, base, durable=False
    )


def batched(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Batch writes, one thread: the sequential rule, plus whole batches and whole units."""
    return (
        durable(tl, cut, result, base)
        + rules.logs(tl, cut, result, base)
        + rules.units(tl, cut, result)
    )


def batched_threads(
    tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]
) -> list[str]:
    """Batch writes from threads: gap-free logs of whole batches, whole units, none lost."""
    return rules.logs(tl, cut, result, base) + rules.units(tl, cut, result)


def migrated(tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]) -> list[str]:
    """Migrate: resuming on the image gives the uninterrupted run's content."""
    return rules.migrated(tl, cut, result)


SCENARIOS: list[tuple[str, Rule]] = [
    ("mixed", durable),
    ("mixed-normal", normal),
    ("group", threads),
    ("sweep", swept),
    ("sweep-pinned", swept),
    ("sweep-appenders", swept),
    ("sweep-cli", swept),
    ("sweep-normal-pinned", swept_normal),
    ("vacuum", durable),
    ("batches", batched),
    ("batch-threads", batched_threads),
]

CONTROLS: list[tuple[str, Rule, str]] = [
    ("control-sync-off", durable, "acknowledged writes lost"),
    ("control-early-wake", threads, "appends acknowledged"),
    ("control-sweep-no-sync", swept, "reporting it deleted, but it is there"),
    ("control-split-delete", swept, "half-deleted"),
    ("control-split-batch", batched, "ends inside a batch"),
]


def _clean(outcome: Outcome) -> None:
    assert outcome.distinct > 0 and outcome.calls > 0, outcome.summary()
    assert not outcome.violations, outcome.report()


@pytest.mark.parametrize(("scenario", "rule"), SCENARIOS, ids=[s for s, _ in SCENARIOS])
def test_no_image_breaks_the_rules(tmp_path: Path, scenario: str, rule: Rule) -> None:
    """Every image of every cut point, in every mode, recovers to a state the rules allow."""
    _clean(run(scenario, tmp_path, rule, cuts=CUTS))


def test_migrate_cut_anywhere_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    """An import cut by power loss at any point, then re-run, equals one clean import."""
    source = tmp_path / "source"
    make_runs(str(source))
    outcome = run("migrate", tmp_path, migrated, cuts=CUTS // 2, args=(str(source),), resume=True)
    _clean(outcome)


@pytest.mark.parametrize(("scenario", "rule", "symptom"), CONTROLS, ids=[s for s, _, _ in CONTROLS])
def test_the_harness_detects_a_broken_rule(
    tmp_path: Path, scenario: str, rule: Rule, symptom: str
) -> None:
    """A workload that breaks a durability rule on purpose is reported, with the right symptom.

    A third of the cut points is plenty: each control breaks its rule at most of them.
    """
    outcome = run(scenario, tmp_path, rule, cuts=CUTS // 3)
    found = [what for _, _, what in outcome.violations]
    assert any(symptom in what for what in found), outcome.report()


def test_the_recording_sees_what_the_library_relies_on(tmp_path: Path) -> None:
    """The trace holds batched commits, the sweep's own fsync and SQLite's directory syncs."""
    group = record("group", tmp_path / "group")["trace"]
    acked = sum(1 for e in group if e[0] == "ack")
    wal_syncs = sum(1 for e in group if e[0] == "sync" and e[1].endswith("-wal"))
    assert 0 < wal_syncs < acked, "no group commit: one WAL sync per acknowledged call"
    assert any(e[0] == "dirsync" for e in group)
    assert any(e[0] == "create" and e[1].endswith("store.db") for e in group)
    assert any(e[0] == "delete" and e[1].endswith("-wal") for e in group)
    pinned = record("sweep-pinned", tmp_path / "pinned")["trace"]
    assert any(e[0] == "sync" and e[2:] == ("os.fsync",) for e in pinned if len(e) > 2)


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "rule"), SCENARIOS, ids=[s for s, _ in SCENARIOS])
def test_deep_run(tmp_path: Path, scenario: str, rule: Rule) -> None:
    """The same checks with more cut points, two draws of each random mode, another seed."""
    _clean(run(scenario, tmp_path, rule, cuts=DEEP_CUTS, seed=1, draws=DEEP_DRAWS))


@pytest.mark.slow
def test_deep_migrate(tmp_path: Path) -> None:
    """The migrate check with more items and more cut points."""
    source = tmp_path / "source"
    make_runs(str(source), count=30)
    outcome = run(
        "migrate",
        tmp_path,
        migrated,
        cuts=DEEP_CUTS // 3,
        seed=1,
        draws=DEEP_DRAWS,
        args=(str(source),),
        resume=True,
    )
    _clean(outcome)
