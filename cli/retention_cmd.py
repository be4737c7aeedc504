"""Retention commands: ``sqlstore prune`` and ``sqlstore retention plan|run|daemon|history``.

Thin wrappers over :mod:`retention`. Every sweep goes through
:func:`retention.sweep_round`, so a one-shot command and a running daemon never
sweep the same file at once, and every sweep lands in the retention history.
Dry runs and ``plan`` only read (they never create a file nor write to one).

Exit status: 0 when nothing failed, 1 on any failure (``Error:`` + ``Hint:``);
bad flags are usage errors (2). ``prune`` exits 1 when another sweeper holds
the store (it was asked to delete now and did not); ``retention run`` exits 0
then (the other sweeper — usually the daemon — does the work), so cron does
not report a failure.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from sqlstore import clock, retention
from sqlstore.errors import StoreError, StoreFull
from sqlstore.retention import DEFAULT_HISTORY_LIMIT, DEFAULT_JITTER, RoundResult, daemon_owner

from . import render
from .context import (
    DURATION,
    AsciiFloatRange,
    AsciiIntRange,
    CliContext,
    Refused,
    json_option,
    pass_cli,
    stdin_is_terminal,
)
from .retention_render import history_lines, plan_lines, report_lines

CONFIG_ENVVAR = "SQLSTORE_RETENTION_CONFIG"
"""Environment variable naming the policy file when ``--config`` is not given."""

KIND_CHOICES = ("child", "main", "scheduled", "all")


class SweeperBusy(StoreError):
    """Another sweeper (a retention daemon or a one-shot run) holds the store."""

    default_hint = "Wait for it to finish, or stop the daemon (`sqlstore retention daemon`)."


config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar=CONFIG_ENVVAR,
    show_envvar=True,
    help="TOML policy file with a [retention] table (default: children 7d, 500 per family).",
)


def load(config_path: Path | None) -> retention.RetentionConfig:
    """Return the policy file's configuration, or the default one without a file."""
    if config_path is None:
        return retention.DEFAULT_CONFIG
    return retention.load_config(config_path)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGTERM/SIGINT while the block runs (only from the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    restore = retention.install_stop_handlers(stop)
    try:
        yield
    finally:
        restore()


FULL_DISK_HINT = (
    "Deleting needs a little free space too (the WAL grows before the file shrinks): free "
    "a few MB on that file system (remove or move another file), run the same command again, "
    "then `sqlstore vacuum --incremental` to give the space back."
)


@contextlib.contextmanager
def full_disk_hint() -> Iterator[None]:
    """Give a ``StoreFull`` raised by a sweep a hint that does not send the user back here."""
    try:
        yield
    except StoreFull as exc:
        raise StoreFull(exc.message, hint=FULL_DISK_HINT) from exc


take_over_option = click.option(
    "--take-over",
    is_flag=True,
    help="Take the sweeper lease from a sweeper that was killed, instead of waiting for it "
    "to lapse.",
)


def run_sweep(
    cli: CliContext,
    store: Any,
    policy: retention.Policy,
    planned: retention.Plan | None,
    *,
    take_over: bool = False,
) -> RoundResult:
    """Sweep under the sweeper lease, stopping cleanly on SIGTERM/SIGINT."""
    stop = threading.Event()
    with stop_on_signals(stop), full_disk_hint():
        return retention.sweep_round(
            store,
            policy,
            owner=daemon_owner(),
            stop=stop,
            log=cli.note,
            planned=planned,
            take_over=take_over,
        )


def busy_text(result: RoundResult) -> str:
    """Return "another retention sweep holds this store: the sweeper lease is held by ..."."""
    held = "" if result.held is None else f": {result.held.describe()}"
    return f"another retention sweep holds this store{held}"


TAKE_OVER_HINT = (
    "If that sweeper is still running, let it finish. If it is gone (killed, its host "
    "down), its lease lapses by itself at the time above; to take over now, run the same "
    "command with --take-over."
)


def finish(cli: CliContext, plan: retention.Plan, report: retention.Report) -> None:
    """Print a sweep's report; exit 1 when anything failed."""
    doc = {"plan": plan.to_json(), "report": report.to_json()}
    if cli.json:
        cli.emit(doc, [])
    else:
        for line in report_lines(report):
            render.echo(line)
    if not report.ok:
        raise click.exceptions.Exit(1)


def policy_for_prune(
    kind: str, older_than: timedelta | None, keep: int, acknowledge: bool
) -> retention.Policy:
    """Return the policy ``sqlstore prune`` flags describe."""
    rule = retention.Rule(max_age=older_than or timedelta(0), max_count=keep)
    off = retention.Rule()
    return retention.Policy(
        main=rule if kind in ("main", "all") else off,
        scheduled=rule if kind in ("scheduled", "all") else off,
        child=rule if kind in ("child", "all") else off,
        acknowledge_main_deletion=acknowledge,
    )


@click.command()
@click.option("--older-than", type=DURATION, help="Delete sessions last written before this.")
@click.option(
    "--kind",
    type=click.Choice(KIND_CHOICES),
    default="child",
    show_default=True,
    help="Which sessions: child (subagent, parallel_branch, team_member), main, scheduled, all.",
)
@click.option(
    "--keep",
    type=AsciiIntRange(min=0),
    default=0,
    help="Also keep at most N newest sessions per family (0: no cap).",
)
@click.option("--dry-run", is_flag=True, help="Only print the exact sessions it would delete.")
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@take_over_option
@click.option(
    "--acknowledge-main-deletion",
    is_flag=True,
    help="Allow deleting main (user) sessions with --kind main/all.",
)
@json_option
@pass_cli
def prune(
    cli: CliContext,
    older_than: timedelta | None,
    kind: str,
    keep: int,
    dry_run: bool,
    yes: bool,
    acknowledge_main_deletion: bool,
    take_over: bool,
) -> None:
    """Delete stale sessions by last-write time, once (for cron or by hand).

    Never deletes running or awaiting sessions, unknown kinds, or sessions
    with a live lease; a session written after planning is kept. Orphans (events
    or audit rows without a snapshot, `ls --orphans`) last written before
    --older-than are deleted too. On a terminal
    it asks first; elsewhere it refuses unless --yes is given.

    Example:

    \b
        sqlstore prune --older-than 30d --kind child --keep 500 --dry-run
    """
    if (older_than is None or older_than == timedelta(0)) and keep == 0:
        raise click.UsageError("give --older-than DURATION and/or --keep N")
    policy = policy_for_prune(kind, older_than, keep, acknowledge_main_deletion)
    with cli.open_store(readonly=dry_run) as store:
        plan = retention.plan(store, policy)
        if dry_run:
            cli.emit(plan.to_json(), plan_lines(plan))
            return
        if (plan.entries or plan.orphans) and not yes:
            what = f"{plan.counts.total} sessions" + (
                f" and {len(plan.orphans)} orphans" if plan.orphans else ""
            )
            if not stdin_is_terminal():
                raise Refused(
                    f"refusing to delete {what} without confirmation: "
                    "standard input is not a terminal",
                    hint="Review them with --dry-run, then pass --yes.",
                )
            for line in plan_lines(plan):
                render.echo(line)
            click.confirm(f"Delete these {what}?", abort=True)
        result = run_sweep(cli, store, policy, plan, take_over=take_over)
    if result.report is None:
        raise SweeperBusy(f"{busy_text(result)}; nothing deleted", hint=TAKE_OVER_HINT)
    finish(cli, plan, result.report)


@click.group("retention")
def retention_group() -> None:
    """Apply a retention policy: show the plan, sweep once, run the daemon, show history.

    The policy comes from --config FILE (TOML, see docs/retention.md) or
    SQLSTORE_RETENTION_CONFIG; without one, child sessions older than 7 days
    or beyond the newest 500 per family are deleted.

    Example:

    \b
        sqlstore --db /var/lib/agent/sessions.db retention plan --config retention.toml
    """


@retention_group.command("plan")
@config_option
@json_option
@pass_cli
def plan_cmd(cli: CliContext, config_path: Path | None) -> None:
    """Print the exact sessions the policy would delete now, and why (age or cap).

    Reads only; never creates or changes the file.

    Example:

    \b
        sqlstore retention plan --config retention.toml --json
    """
    config = load(config_path)
    with cli.open_store(readonly=True) as store:
        plan = retention.plan(store, config.policy)
    cli.emit(plan.to_json(), plan_lines(plan))


@retention_group.command("run")
@config_option
@click.option("--dry-run", is_flag=True, help="Only print the plan (same as `retention plan`).")
@take_over_option
@json_option
@pass_cli
def run_cmd(cli: CliContext, config_path: Path | None, dry_run: bool, take_over: bool) -> None:
    """Sweep once with the policy (for cron); the sweep is recorded in the history.

    Skips (exit 0) when a daemon or another run is sweeping the same file.

    Example:

    \b
        sqlstore --db /var/lib/agent/sessions.db retention run --config /etc/sqlstore/retention.toml
    """
    config = load(config_path)
    with cli.open_store(readonly=dry_run) as store:
        plan = retention.plan(store, config.policy)
        if dry_run:
            cli.emit(plan.to_json(), plan_lines(plan))
            return
        result = run_sweep(cli, store, config.policy, plan, take_over=take_over)
    if result.report is None:
        text = busy_text(result)
        cli.emit({"skipped": text}, [f"Skipped: {text}.", f"({TAKE_OVER_HINT})"])
        return
    finish(cli, plan, result.report)


@retention_group.command("daemon")
@config_option
@click.option(
    "--every",
    type=DURATION,
    help="Interval between sweeps (default: the file's sweep_every, else 1h; 0: once).",
)
@click.option(
    "--jitter",
    type=AsciiFloatRange(min=0, max=1, max_open=True),
    default=DEFAULT_JITTER,
    show_default=True,
    help="Vary the interval by this fraction either way.",
)
@pass_cli
def daemon_cmd(
    cli: CliContext, config_path: Path | None, every: timedelta | None, jitter: float
) -> None:
    """Sweep now and then every interval, in the foreground, until SIGTERM or Ctrl-C.

    Logs one line per sweep on stderr. Stops cleanly (exit 0) after the current
    deletion on SIGTERM/SIGINT. Only one daemon sweeps a file at a time; another
    one skips its rounds while the first sweeps. A failed sweep is logged and
    the loop goes on.

    Example:

    \b
        sqlstore --db /var/lib/agent/sessions.db retention daemon --config retention.toml --every 1h
    """
    config = load(config_path)
    interval = config.sweep_every if every is None else every
    cli.require_existing()

    def log(line: str) -> None:
        render.echo(f"{clock.format_rfc3339(clock.now())} {line}", err=True)

    def open_store() -> Any:
        return cli.open_store()

    stop = threading.Event()
    log(
        f"retention daemon started: db={cli.db} every={retention.format_duration(interval)} "
        f"policy {config.policy.describe()}"
    )
    with stop_on_signals(stop):
        rounds = retention.run_daemon(
            open_store, config.policy, interval, stop=stop, jitter=jitter, log=log
        )
    log(f"retention daemon stopped after {rounds} round(s)")


@retention_group.command("history")
@click.option(
    "--limit",
    type=AsciiIntRange(min=1),
    default=DEFAULT_HISTORY_LIMIT,
    show_default=True,
    help="Most recent sweeps to show.",
)
@json_option
@pass_cli
def history_cmd(cli: CliContext, limit: int) -> None:
    """Show the recorded retention sweeps, newest first.

    SKIPPED counts sessions kept because they changed or were leased after planning.

    Example:

    \b
        sqlstore retention history --limit 10 --json
    """
    with cli.open_store(readonly=True) as store:
        runs = retention.list_runs(store, limit)
    cli.emit([r.to_json() for r in runs], history_lines(runs))
