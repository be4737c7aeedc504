"""CLI: `sqlstore prune` and `sqlstore retention plan|run|daemon|history` on real files."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from freezegun import freeze_time
from test_retention_support import T0, put_now

import retention
from cli.main import cli
from retention import DAEMON_LEASE_NAME
from sqlstore import Kind, SQLiteStore, State

REPO = Path(__file__).resolve().parent.parent
DAY = timedelta(days=1)
SUBPROCESS_WAIT_S = 60

POLICY_TOML = """
[retention]
sweep_every = "1h"

[retention.child]
max_age = "7d"

[retention.scheduled]
max_age = "30d"
max_count = 1
"""


def run(*args: str, input: str | None = None) -> Result:
    """Invoke the CLI in-process at the frozen reference time T0."""
    with freeze_time(T0):
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A file with stale children (old-a, old-b), a fresh child, a stale running child,
    stale main, and three scheduled sessions (one stale)."""
    path = tmp_path / "sessions.db"
    with SQLiteStore(path) as store:
        with freeze_time(T0 - 10 * DAY):
            put_now(store, "old-a")
            put_now(store, "old-b", kind=Kind.TEAM_MEMBER, state=State.FAILED)
            put_now(store, "old-running", state=State.RUNNING)
            put_now(store, "old-main", kind=Kind.MAIN)
        with freeze_time(T0 - 40 * DAY):
            put_now(store, "sched-1", kind=Kind.SCHEDULED)
        with freeze_time(T0 - 2 * DAY):
            put_now(store, "sched-2", kind=Kind.SCHEDULED)
        with freeze_time(T0 - DAY):
            put_now(store, "sched-3", kind=Kind.SCHEDULED)
            put_now(store, "fresh")
    return path


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A policy file: children 7d, scheduled 30d capped at 1."""
    path = tmp_path / "retention.toml"
    path.write_text(POLICY_TOML, encoding="utf-8")
    return path


def ids_in(path: Path) -> list[str]:
    """Return the ids stored in the file, sorted."""
    with SQLiteStore(path) as store:
        return sorted(m.id for m in store.sessions.iter_meta())


ALL_IDS = ["fresh", "old-a", "old-b", "old-main", "old-running", "sched-1", "sched-2", "sched-3"]


def test_prune_dry_run_prints_exact_candidates(db: Path) -> None:
    """--dry-run prints every candidate with kind, state, modified_at and reason; deletes none."""
    result = run("--db", str(db), "prune", "--older-than", "7d", "--dry-run")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "KIND", "STATE", "MODIFIED", "(UTC)", "REASON"]
    assert lines[1].split() == [
        "old-a",
        "subagent",
        "completed",
        "2025-12-22T00:00:00.000000Z",
        "age",
    ]
    assert lines[2].split() == [
        "old-b",
        "team_member",
        "failed",
        "2025-12-22T00:00:00.000000Z",
        "age",
    ]
    assert lines[3].startswith("2 of 8 sessions planned (age=2); protected: active_state=1")
    assert ids_in(db) == ALL_IDS


def test_prune_dry_run_json(db: Path) -> None:
    """--json gives the plan with entries, counts and generation."""
    result = run("--db", str(db), "prune", "--older-than", "7d", "--dry-run", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert [e["id"] for e in doc["entries"]] == ["old-a", "old-b"]
    assert doc["counts"]["by_kind"] == {"subagent": 1, "team_member": 1}
    assert len(doc["generation"]) == 64


def test_prune_refuses_without_yes_off_terminal(db: Path) -> None:
    """Without --yes and without a terminal, prune refuses with a hint and deletes nothing."""
    result = run("--db", str(db), "prune", "--older-than", "7d")
    assert result.exit_code == 1
    assert "Error: refusing to delete 2 sessions" in result.stderr
    assert "Hint:" in result.stderr
    assert ids_in(db) == ALL_IDS


def test_prune_yes_deletes_and_records(db: Path) -> None:
    """--yes deletes the planned sessions, reports them and records the sweep."""
    result = run("--db", str(db), "prune", "--older-than", "7d", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "Deleted 2 of 2 planned sessions" in result.output
    assert ids_in(db) == [i for i in ALL_IDS if i not in ("old-a", "old-b")]
    history = run("--db", str(db), "retention", "history", "--json")
    runs = json.loads(history.output)
    assert [(r["planned"], r["deleted"], r["failed"]) for r in runs] == [(2, 2, 0)]


def test_prune_keep_caps_each_family(db: Path) -> None:
    """--keep alone caps per family without an age limit."""
    result = run("--db", str(db), "prune", "--kind", "scheduled", "--keep", "1", "--yes", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert [(e["id"], e["reason"]) for e in doc["plan"]["entries"]] == [
        ("sched-1", "cap"),
        ("sched-2", "cap"),
    ]
    assert doc["report"]["deleted"] == 2


def test_prune_main_needs_acknowledgement(db: Path) -> None:
    """--kind main without --acknowledge-main-deletion fails with Error and Hint, exit 1."""
    result = run("--db", str(db), "prune", "--older-than", "7d", "--kind", "main", "--yes")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: the main rule")
    assert "--acknowledge-main-deletion" in result.stderr
    assert ids_in(db) == ALL_IDS
    ok = run(
        "--db", str(db), "prune", "--older-than", "7d", "--kind", "main", "--yes",
        "--acknowledge-main-deletion",
    )  # fmt: skip
    assert ok.exit_code == 0
    assert "old-main" not in ids_in(db)


def test_prune_all_kinds(db: Path) -> None:
    """--kind all applies the rule to main, scheduled and children (with acknowledgement)."""
    result = run(
        "--db", str(db), "prune", "--older-than", "7d", "--kind", "all", "--yes",
        "--acknowledge-main-deletion",
    )  # fmt: skip
    assert result.exit_code == 0
    assert ids_in(db) == ["fresh", "old-running", "sched-2", "sched-3"]


@pytest.mark.parametrize(
    "args",
    [
        ["prune"],
        ["prune", "--older-than", "0"],
        ["prune", "--older-than", "soon"],
        ["prune", "--older-than", "7d", "--kind", "everything"],
        ["prune", "--keep", "-1"],
    ],
)
def test_prune_usage_errors_exit_2(db: Path, args: list[str]) -> None:
    """Missing or malformed flags are usage errors (exit 2) and change nothing."""
    result = run("--db", str(db), *args)
    assert result.exit_code == 2
    assert ids_in(db) == ALL_IDS


@pytest.mark.parametrize(
    "args",
    [
        ["prune", "--older-than", "7d", "--dry-run"],
        ["prune", "--older-than", "7d", "--yes"],
        ["retention", "plan"],
        ["retention", "run"],
        ["retention", "history"],
        ["retention", "daemon", "--every", "0"],
    ],
)
def test_missing_database_is_not_created(tmp_path: Path, args: list[str]) -> None:
    """Every retention command fails (exit 1, Error + Hint) on a missing file and creates none."""
    path = tmp_path / "nothing.db"
    result = run("--db", str(path), *args)
    assert result.exit_code == 1
    assert "Error: no database at" in result.stderr
    assert "Hint:" in result.stderr
    assert not path.exists()


def test_retention_plan_uses_config(db: Path, config: Path) -> None:
    """`retention plan --config` lists age and cap candidates per the file and changes nothing."""
    result = run("--db", str(db), "retention", "plan", "--config", str(config), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert [(e["id"], e["reason"]) for e in doc["entries"]] == [
        ("sched-1", "age"),
        ("old-a", "age"),
        ("old-b", "age"),
        ("sched-2", "cap"),
    ]
    assert ids_in(db) == ALL_IDS


def test_retention_plan_default_policy(db: Path) -> None:
    """Without a config the default policy (children 7d, 500 per family) applies."""
    result = run("--db", str(db), "retention", "plan")
    assert result.exit_code == 0
    assert "old-a" in result.output and "sched-1" not in result.output
    assert "child: max_age=1w max_count=500" in result.output


def test_retention_plan_config_from_env(db: Path, config: Path) -> None:
    """SQLSTORE_RETENTION_CONFIG names the policy file when --config is absent."""
    with freeze_time(T0):
        result = CliRunner().invoke(
            cli,
            ["--db", str(db), "retention", "plan", "--json"],
            env={"SQLSTORE_RETENTION_CONFIG": str(config)},
        )
    assert result.exit_code == 0
    assert len(json.loads(result.output)["entries"]) == 4


def test_retention_bad_config_names_key(db: Path, tmp_path: Path) -> None:
    """A policy file with an unknown key fails with exit 1 and names the key."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[retention.child]\nmax_ag = '7d'\n", encoding="utf-8")
    result = run("--db", str(db), "retention", "run", "--config", str(bad))
    assert result.exit_code == 1
    assert "retention.child.max_ag" in result.stderr
    assert "Hint:" in result.stderr
    assert ids_in(db) == ALL_IDS


def test_retention_run_then_history(db: Path, config: Path) -> None:
    """`retention run` sweeps once per the file; `retention history` shows the run."""
    dry = run("--db", str(db), "retention", "run", "--config", str(config), "--dry-run")
    assert dry.exit_code == 0
    assert ids_in(db) == ALL_IDS
    result = run("--db", str(db), "retention", "run", "--config", str(config))
    assert result.exit_code == 0, result.stderr
    assert "Deleted 4 of 4 planned sessions" in result.output
    assert ids_in(db) == ["fresh", "old-main", "old-running", "sched-3"]
    history = run("--db", str(db), "retention", "history")
    assert history.exit_code == 0
    lines = history.output.splitlines()
    assert lines[0].split()[:3] == ["ID", "STARTED", "(UTC)"]
    assert lines[1].split()[0] == "1"
    assert lines[1].split()[4:8] == ["4", "4", "0", "0"]


def test_retention_history_empty(db: Path) -> None:
    """An unswept file has an empty history."""
    result = run("--db", str(db), "retention", "history")
    assert result.exit_code == 0
    assert result.output.strip() == "No retention sweeps recorded."


def test_run_skips_and_prune_fails_while_another_sweeper_holds(db: Path) -> None:
    """With the sweeper lease held elsewhere, `run` skips (exit 0) and `prune` fails (exit 1)."""
    with SQLiteStore(db) as other, freeze_time(T0):
        other.leases.acquire(DAEMON_LEASE_NAME, "daemon-elsewhere", timedelta(minutes=5))
    skipped = run("--db", str(db), "retention", "run")
    assert skipped.exit_code == 0
    assert "Skipped" in skipped.output
    failed = run("--db", str(db), "prune", "--older-than", "7d", "--yes")
    assert failed.exit_code == 1
    assert "Error: another retention sweep holds this store" in failed.stderr
    assert "held by daemon-elsewhere" in failed.stderr and "--take-over" in failed.stderr
    assert ids_in(db) == ALL_IDS


def test_take_over_sweeps_despite_another_holder(db: Path) -> None:
    """`prune --take-over` releases a lapsed-in-all-but-time lease and sweeps at once."""
    with SQLiteStore(db) as other:
        other.leases.acquire(DAEMON_LEASE_NAME, "killed-daemon", timedelta(minutes=5))
    taken = run("--db", str(db), "prune", "--older-than", "7d", "--yes", "--take-over")
    assert taken.exit_code == 0, taken.stderr
    assert ids_in(db) != ALL_IDS
    with SQLiteStore(db) as store:
        assert DAEMON_LEASE_NAME not in store.leases.held()


def test_daemon_every_zero_sweeps_once(db: Path, config: Path) -> None:
    """`retention daemon --every 0` sweeps once, logs start, sweep and stop lines, exits 0."""
    result = run("--db", str(db), "retention", "daemon", "--config", str(config), "--every", "0")
    assert result.exit_code == 0, result.stderr
    log = result.stderr.splitlines()
    assert "retention daemon started" in log[0]
    assert "retention sweep: planned=4 deleted=4" in log[1]
    assert "stopped after 1 round(s)" in log[2]
    assert ids_in(db) == ["fresh", "old-main", "old-running", "sched-3"]


def _all_commands() -> list[list[str]]:
    paths = [["prune"], ["retention"]]
    group = cli.commands["retention"]
    assert isinstance(group, click.Group)
    paths += [["retention", name] for name in group.commands]
    return paths


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_example(path: list[str]) -> None:
    """--help of every retention command shows an example invocation."""
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output
    assert "sqlstore " in result.output.split("Example:", 1)[1]


CONSOLE_SCRIPT = Path(sys.executable).with_name("sqlstore")
"""The installed console script (``pip install -e .`` puts it beside the interpreter)."""


def test_daemon_process_stops_cleanly_on_sigterm(db: Path, config: Path) -> None:
    """The installed `sqlstore retention daemon` logs its first sweep, then exits 0 on SIGTERM."""
    proc = subprocess.Popen(
        [str(CONSOLE_SCRIPT), "--db", str(db), "retention", "daemon",
         "--config", str(config), "--every", "1h"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        lines = [proc.stderr.readline(), proc.stderr.readline()]
        assert "retention daemon started" in lines[0], lines
        assert "retention sweep: planned=" in lines[1], lines
        proc.send_signal(signal.SIGTERM)
        # "Promptly": long before the one-hour interval would end the wait.
        assert proc.wait(SUBPROCESS_WAIT_S) == 0
        rest = proc.stderr.read()
        assert "retention daemon stopped after 1 round(s)" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    with SQLiteStore(db) as store:
        assert DAEMON_LEASE_NAME not in store.leases.held()


def test_two_daemon_processes_never_sweep_together(tmp_path: Path) -> None:
    """Two daemon processes started together on one file: at most one of them plans work."""
    path = tmp_path / "shared.db"
    with SQLiteStore(path, durability="normal") as store, freeze_time(T0 - 10 * DAY):
        for i in range(1000):
            put_now(store, f"s{i:04d}")
    # A cap-only policy: what is deleted does not depend on the real clock.
    config = tmp_path / "cap.toml"
    config.write_text("[retention.child]\nmax_count = 1\n", encoding="utf-8")
    args = ["--db", str(path), "retention", "daemon", "--every", "0", "--config", str(config)]
    procs = [
        subprocess.Popen(
            [str(CONSOLE_SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=SUBPROCESS_WAIT_S) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    with SQLiteStore(path) as store:
        assert [m.id for m in store.sessions.iter_meta()] == ["s0999"]
        runs = retention.list_runs(store)
    # The lease serialises the sweeps: the second one either skipped (one run) or
    # planned only after the first had deleted everything (planned == 0).
    assert sum(r.deleted for r in runs) == 999
    assert sum(r.changed for r in runs) == 0
    assert [r.planned > 0 for r in runs].count(True) == 1
