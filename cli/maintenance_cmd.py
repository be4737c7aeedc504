"""Maintenance commands: ``check``, ``stats``, ``vacuum`` and ``backup``.

Each one calls one function of :mod:`sqlstore.sqlite.maintenance` and renders
its report. ``check`` and ``stats`` only read and never create a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click

from sqlstore.sqlite import maintenance
from sqlstore.sqlite.connection import SCHEMA_VERSION

from . import render
from .context import CliContext, NonEmptyPath, json_option, pass_cli


def check_lines(report: maintenance.CheckReport) -> Iterator[str]:
    """Yield the human report of ``sqlstore check``."""
    yield f"file            {report.path}"
    yield f"status          {'ok' if report.ok else 'PROBLEMS FOUND'}"
    if report.schema_version is not None:
        yield f"schema version  {report.schema_version} (this sqlstore: {SCHEMA_VERSION})"
    if report.journal_mode:
        yield f"journal mode    {report.journal_mode}"
    yield f"file size       {render.human_bytes(report.file_bytes)}"
    yield f"wal size        {render.human_bytes(report.wal_bytes)}"
    for table, count in report.counts.items():
        yield f"{table.ljust(15)} {count}"
    for problem in report.problems:
        yield f"problem: {problem}"


@click.command(short_help="Check integrity, schema and WAL; exit 1 on problems.")
@click.option(
    "--quick", is_flag=True, help="PRAGMA quick_check: faster, skips index-content checks."
)
@json_option
@pass_cli
def check(cli: CliContext, quick: bool) -> None:
    """Check the file: integrity, schema version, WAL mode and size, row counts.

    Exit status 1 when a problem is found. Reads only; never creates a file.

    Example:

    \b
        sqlstore --db /var/lib/agent/sessions.db check
    """
    report = maintenance.check(cli.require_existing(), quick=quick)
    cli.emit(report.to_json(), check_lines(report))
    if not report.ok:
        raise click.exceptions.Exit(1)


@click.command(short_help="Show counts by kind and state, and file sizes.")
@json_option
@pass_cli
def stats(cli: CliContext) -> None:
    """Show sessions by kind and state, events, audit rows, file and WAL bytes, age range.

    Example:

    \b
        sqlstore --json stats
    """
    with cli.open_store(readonly=True) as store:
        report = maintenance.stats(store)

    def human() -> Iterator[str]:
        yield f"file          {report.path}"
        yield f"sessions      {report.sessions}"
        for kind, n in report.by_kind.items():
            yield f"  kind {kind.ljust(16)} {n}"
        for state, n in report.by_state.items():
            yield f"  state {state.ljust(15)} {n}"
        yield f"events        {report.events} (in {report.event_logs} logs)"
        yield f"audit rows    {report.audit_rows}"
        yield f"leases held   {report.leases}"
        if report.checkpoints:
            yield (
                f"checkpoints   {report.checkpoints} in {report.threads} threads "
                f"({report.checkpoint_blobs} channel values, {report.checkpoint_writes} writes)"
            )
        yield f"file size     {render.human_bytes(report.file_bytes)}"
        yield f"wal size      {render.human_bytes(report.wal_bytes)}"
        yield f"free space    {render.human_bytes(report.free_pages * report.page_size)}"
        yield f"oldest write  {render.short_time(report.oldest) or '-'}"
        yield f"newest write  {render.short_time(report.newest) or '-'}"

    cli.emit(report.to_json(), human)


@click.command(short_help="Shrink the file (VACUUM, or --incremental).")
@click.option(
    "--incremental",
    is_flag=True,
    help="Only return free pages to the file system (quick; no full rewrite).",
)
@json_option
@pass_cli
def vacuum(cli: CliContext, incremental: bool) -> None:
    """Shrink the file: checkpoint the WAL and rewrite the database (VACUUM).

    A full vacuum holds the write lock while it runs; writers in other processes
    wait up to their busy timeout. Prefer --incremental while agents are running.

    Example:

    \b
        sqlstore vacuum --incremental
    """
    with cli.open_store() as store:
        report = maintenance.vacuum(store, incremental=incremental)
    cli.emit(
        report.to_json(),
        [
            f"{report.mode} vacuum of {report.path} in {report.seconds:.2f} s: "
            f"{render.human_bytes(report.bytes_before + report.wal_bytes_before)} -> "
            f"{render.human_bytes(report.bytes_after + report.wal_bytes_after)}"
        ],
    )


@click.command(short_help="Copy the live database to DEST and check the copy.")
@click.argument("dest", type=NonEmptyPath(path_type=Path))
@json_option
@pass_cli
def backup(cli: CliContext, dest: Path) -> None:
    """Copy the database to DEST while it is in use (SQLite online backup), then check the copy.

    DEST must not exist. A copy that fails its check is deleted, with an error
    (exit status 1): the source itself is damaged.

    Example:

    \b
        sqlstore backup /backups/sessions-$(date +%F).db
    """
    with cli.open_store(readonly=True) as store:
        report = maintenance.backup(store, dest)
    cli.emit(
        report.to_json(),
        [
            f"Backed up {report.source} to {report.dest}: {report.pages} pages, "
            f"{render.human_bytes(report.bytes)} in {report.seconds:.2f} s; "
            "check ok",
        ],
    )
