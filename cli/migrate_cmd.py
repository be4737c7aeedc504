"""``sqlstore migrate`` and ``sqlstore export``: thin wrappers over :mod:`sqlstore.migrate`.

Register both on the group with ``cli.add_command(migrate)`` and
``cli.add_command(export)``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

import sqlstore
from sqlstore import MemoryStore
from sqlstore.migrate import (
    FORMATS,
    MIGRATE_BATCH_SESSIONS,
    MIGRATE_BATCH_SESSIONS_MAX,
    ExportReport,
    MigrationReport,
    export_sessions,
    run_migration,
)
from sqlstore.sqlite.options import SQLITE_URL_PREFIX, parse_sqlite_url

from . import render
from .context import AsciiIntRange, CliContext, NonEmptyPath, json_option, pass_cli

WARNINGS_SHOWN = 20
"""Warnings listed in the human summary; ``--json`` has them all."""

EXIT_INTERRUPTED = 130


class _Progress:
    """A click progress bar created on the first callback, once the total is known."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label="Importing", file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def summary_lines(report: MigrationReport) -> Iterator[str]:
    """Yield the human summary of a migration: a table, then failures and warnings."""
    skipped = ", ".join(f"{reason} {n}" for reason, n in sorted(report.skipped.items()))
    megabytes = report.bytes / 1_000_000
    rows = [
        ("imported", f"{report.imported}" + (" (dry run)" if report.dry_run else "")),
        ("skipped", f"{sum(report.skipped.values())}" + (f" ({skipped})" if skipped else "")),
        ("failed", str(report.failed)),
        ("incomplete runs", str(report.incomplete)),
        ("events", str(report.events)),
        ("audit rows", str(report.audit_rows)),
        ("MB", f"{megabytes:.2f}"),
        ("seconds", f"{report.seconds:.2f}"),
        ("MB/s", f"{report.megabytes_per_second:.2f}"),
    ]
    if report.verified:
        rows.append(("verified", str(report.verified)))
    yield f"Job {report.job_id} ({report.format}) from {render.visible(report.source)}"
    yield from render.table(("", "count"), rows)
    for item in report.items:
        if item.outcome == "failed":
            yield f"failed: {render.visible(item.item)}: {render.one_line(item.detail, 200)}"
    for warning in report.warnings[:WARNINGS_SHOWN]:
        yield f"warning: {render.one_line(warning, 200)}"
    if len(report.warnings) > WARNINGS_SHOWN:
        yield f"… and {len(report.warnings) - WARNINGS_SHOWN} more warnings (see --json)"


@click.command("migrate")
@click.argument(
    "source", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--to",
    "to_target",
    metavar="URL|PATH",
    help="Write into this store instead of --db (redis://host:port/db, sqlite:///f.db, a path).",
)
@click.option(
    "--from",
    "from_origin",
    metavar="URL|PATH",
    help="Copy every session of this store (instead of importing SOURCE).",
)
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), help="Source format (default: detected)."
)
@click.option(
    "--batch",
    type=AsciiIntRange(1, MIGRATE_BATCH_SESSIONS_MAX),
    default=MIGRATE_BATCH_SESSIONS,
    show_default=True,
    help="Sessions per transaction.",
)
@click.option("--overwrite", is_flag=True, help="Replace existing sessions and changed items.")
@click.option("--dry-run", is_flag=True, help="Only inspect and report; write nothing.")
@click.option("--verify", is_flag=True, help="Load every imported session back and compare.")
@json_option
@pass_cli
@click.pass_context
def migrate(
    ctx: click.Context,
    cli: CliContext,
    source: Path | None,
    to_target: str | None,
    from_origin: str | None,
    fmt: str | None,
    batch: int,
    overwrite: bool,
    dry_run: bool,
    verify: bool,
) -> None:
    """Import a directory of openzot run logs or a mecatl JSONL store.

    Resumable: after a crash or Ctrl-C run the same command again; committed
    sessions are not imported twice. Exits 1 when an item failed (torn lines,
    malformed lines and skipped items are reported but are not failures).

    Between stores: ``--to URL`` without SOURCE copies every session of the --db
    file into another store (for example Redis); ``--from URL`` copies one back
    (into --to, or into --db). Copies are resumable too.

    Example:

    \b
        sqlstore --db sessions.db migrate ~/.openzot/runs
        sqlstore migrate ./store-dir --format mecatl --dry-run --json
        sqlstore --db sessions.db migrate --to redis://127.0.0.1:6379/0
        sqlstore migrate --from redis://127.0.0.1:6379/0 --to restored.db
    """
    if source is None and to_target is None and from_origin is None:
        raise click.UsageError("give a SOURCE directory, or --to/--from to copy between stores")
    if source is not None and from_origin is not None:
        raise click.UsageError(
            "SOURCE and --from are exclusive: import a directory or copy a store"
        )
    if source is None:
        _copy_between_stores(ctx, cli, from_origin, to_target, batch, overwrite, dry_run, verify)
        return
    progress = _Progress(sys.stdout.isatty() and not cli.json)
    try:
        with ExitStack() as stack:
            store = stack.enter_context(_destination(cli, to_target, dry_run))
            report = run_migration(
                store,
                source,
                fmt=fmt,
                batch_sessions=batch,
                overwrite=overwrite,
                dry_run=dry_run,
                verify=verify,
                progress=progress,
            )
    except KeyboardInterrupt:
        progress.close()
        click.echo(
            "Interrupted: committed batches are kept; run the same command again to continue.",
            err=True,
        )
        ctx.exit(EXIT_INTERRUPTED)
    progress.close()
    cli.emit(report.to_json(), lambda: summary_lines(report))
    ctx.exit(0 if report.ok else 1)


def _destination(cli: CliContext, target: str | None, dry_run: bool) -> Any:
    """Open the store a migration writes into (``--to``, else ``--db``).

    With ``dry_run`` nothing is created or written: a SQLite file that does not
    exist yet is stood in for by an empty ``MemoryStore``, an existing one is
    opened read-only (a Redis server is only read).
    """
    if target == "":
        raise click.BadParameter("is empty; give a store URL or a path", param_hint="'--to'")
    if target is None:
        if dry_run and not os.path.exists(cli.db):
            return MemoryStore()  # inspect only: never create the file
        return cli.open_store(create=not dry_run, readonly=dry_run)
    try:
        if dry_run:
            path = _sqlite_path(target)
            if path is not None:
                if not Path(path).exists():
                    return MemoryStore()
                return sqlstore.SQLiteStore(path, readonly=True)
        return sqlstore.open(target)
    except ValueError as exc:  # a bad scheme, or an InvalidOption of a sqlite:/// URL
        raise click.BadParameter(str(exc), param_hint="'--to'") from None


def _sqlite_path(target: str) -> str | None:
    """The file a ``--to``/``--from`` value names, or None for memory/Redis URLs."""
    if target in ("memory:", "memory://") or target.startswith(("redis://", "rediss://")):
        return None
    if target.startswith(SQLITE_URL_PREFIX):
        return parse_sqlite_url(target)[0]  # bad options: InvalidOption, a ValueError
    return None if "://" in target else target


def _copy_between_stores(
    ctx: click.Context,
    cli: CliContext,
    origin: str | None,
    target: str | None,
    batch: int,
    overwrite: bool,
    dry_run: bool,
    verify: bool,
) -> None:
    """Copy every session of one store into another (``migrate --to/--from``)."""
    from sqlstore.migrate.copy import copy_store

    with ExitStack() as stack:
        if origin is None:
            src: Any = stack.enter_context(cli.open_store(readonly=True))
        else:
            try:
                src = stack.enter_context(sqlstore.open(origin))
            except ValueError as exc:
                raise click.BadParameter(str(exc), param_hint="'--from'") from None
        dst: Any = stack.enter_context(_destination(cli, target, dry_run))
        try:
            report = copy_store(
                src, dst, batch=batch, overwrite=overwrite, dry_run=dry_run, verify=verify
            )
        except KeyboardInterrupt:
            click.echo("Interrupted: run the same command again to continue.", err=True)
            ctx.exit(EXIT_INTERRUPTED)
    doc = report.to_json()

    def lines() -> Iterator[str]:
        skipped = ", ".join(f"{k} {n}" for k, n in sorted(report.skipped.items())) or "0"
        copied = f"{report.copied} (dry run: nothing written)" if report.dry_run else report.copied
        yield f"copied {copied}, skipped {skipped}, failed {len(report.failed)}"
        yield f"events {report.events}, audit rows {report.audit_rows}, {report.seconds:.1f} s"
        if verify and not report.dry_run:
            yield f"verified {report.verified}"
        for sid, why in report.failed:
            yield f"failed: {render.visible(sid)}: {render.one_line(why, 200)}"

    cli.emit(doc, lines)
    ctx.exit(0 if report.ok else 1)


def export_lines(report: ExportReport) -> Iterator[str]:
    """Yield the human summary of an export."""
    megabytes = report.bytes / 1_000_000
    yield (
        f"Exported {len(report.exported)} session(s) as {report.format} to {report.out} "
        f"({report.events} log records, {megabytes:.2f} MB, {report.seconds:.2f} s)"
    )
    for session_id, reason in report.failed:
        yield f"failed: {render.visible(session_id)}: {render.one_line(reason, 200)}"
    if report.orphans:
        yield (
            f"not exported: {report.orphans} orphan(s) with events or audit rows but no "
            "snapshot (`sqlstore ls --orphans` lists them)"
        )
    if report.failed:
        yield (
            "Hint: the other sessions were exported; fix the cause and export the failed ones "
            "again with --session ID (`sqlstore check` checks the file)."
        )


@click.command("export")
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="Output format.")
@click.option(
    "--out",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    required=True,
    help="Output directory (created; existing files are never overwritten).",
)
@click.option("--all", "all_sessions", is_flag=True, help="Export every session.")
@click.option("--session", "session_ids", multiple=True, help="A session id (repeatable).")
@json_option
@pass_cli
@click.pass_context
def export(
    ctx: click.Context,
    cli: CliContext,
    fmt: str,
    out: Path,
    all_sessions: bool,
    session_ids: tuple[str, ...],
) -> None:
    """Write sessions back as openzot run logs or as a mecatl sid-v2 store.

    Exits 1 when a session could not be written (for example its file exists).

    Example:

    \b
        sqlstore export --format runlog --out ./runs --all
        sqlstore export --format mecatl --out ./store --session 20261129-140501
    """
    if all_sessions == bool(session_ids):
        raise click.UsageError("pass either --all or one or more --session ID")
    with cli.open_store(readonly=True) as store:
        report = export_sessions(store, fmt, out, session_ids=None if all_sessions else session_ids)
    cli.emit(report.to_json(), lambda: export_lines(report))
    ctx.exit(0 if report.ok else 1)
