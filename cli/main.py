"""The ``sqlstore`` command line: the click group, its global options and the error edge.

Commands are thin: parse the options, make one library call, render the result
(a table for people, JSON with ``--json``). ``sqlstore.errors.StoreError`` is
caught once, in :class:`SqlstoreGroup`, and printed as ``Error: …`` plus
``Hint: …`` with exit status 1; click's usage errors exit 2.

Shared state lives in :mod:`cli.context` (read its docstring before writing a
command module). ``init`` is below; the session commands are in
:mod:`cli.session_cmd`, the maintenance commands in :mod:`cli.maintenance_cmd`,
``prune``/``retention`` in :mod:`cli.retention_cmd` and ``migrate``/``export`` in
:mod:`cli.migrate_cmd`; all are registered at the bottom of this file.
"""

from __future__ import annotations

import os
import traceback
from pathlib import Path
from typing import Any

import click

import sqlstore
from sqlstore.errors import StoreError

from . import render
from .context import (
    DB_ENVVAR,
    DEFAULT_DB,
    CliContext,
    DbPath,
    accept_db_after_command,
    get_cli,
    json_option,
    pass_cli,
)


class SqlstoreGroup(click.Group):
    """A click group that turns ``StoreError`` into ``Error:``/``Hint:`` lines and exit 1."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; report a ``StoreError`` on stderr and exit 1."""
        try:
            return super().invoke(ctx)
        except StoreError as exc:
            report_error(exc, get_cli(ctx).verbose)
            ctx.exit(1)


def report_error(exc: StoreError, verbose: int) -> None:
    """Print a store error as ``Error: …`` and ``Hint: …`` on stderr (traceback with -vv)."""
    if verbose >= 2:
        click.echo("".join(traceback.format_exception(exc)).rstrip(), err=True)
    render.echo(f"Error: {exc}", err=True)
    if verbose and exc.__cause__ is not None:
        render.echo(f"Cause: {exc.__cause__!r}", err=True)
    if exc.hint:
        render.echo(f"Hint: {exc.hint}", err=True)


@click.group(cls=SqlstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    type=DbPath(path_type=Path),
    envvar=DB_ENVVAR,
    default=DEFAULT_DB,
    show_default=True,
    show_envvar=True,
    help="The database file.",
)
@click.option("--json", "json_output", is_flag=True, help="Print machine-readable JSON.")
@click.option("-v", "--verbose", count=True, help="More detail on stderr (repeat for debug).")
@click.version_option(sqlstore.__version__, "--version", prog_name="sqlstore")
@click.pass_context
def cli(ctx: click.Context, db: Path, json_output: bool, verbose: int) -> None:
    """Inspect and maintain a sqlstore database of agent sessions.

    Example:

    \b
        sqlstore --db ~/agent/sessions.db ls --state failed --newer-than 1d
    """
    obj = get_cli(ctx)
    obj.db = db
    obj.json = obj.json or json_output
    obj.verbose = verbose


@cli.command(short_help="Create (or check) the database file.")
@json_option
@pass_cli
def init(cli: CliContext) -> None:
    """Create the database file (idempotent: an existing sqlstore file is only checked).

    Example:

    \b
        sqlstore --db ./sessions.db init
    """
    existed = os.path.exists(cli.db)  # False (not a traceback) for a name too long
    with cli.open_store(create=True):
        pass
    doc = {"db": str(cli.db), "created": not existed}
    verb = "Checked existing" if existed else "Created"
    cli.emit(doc, [f"{verb} sqlstore database {cli.db}"])


def main() -> None:
    """Run the console script ``sqlstore``."""
    cli(prog_name="sqlstore")


# -- commands from other modules ---------------------------------------------------------
from .maintenance_cmd import backup, check, stats, vacuum  # noqa: E402
from .migrate_cmd import export, migrate  # noqa: E402
from .retention_cmd import prune, retention_group  # noqa: E402
from .session_cmd import audit, events, ls_cmd, rm, show  # noqa: E402
from .ui_cmd import ui_cmd  # noqa: E402

for _command in (
    *(ls_cmd, show, events, audit, rm),
    *(check, stats, vacuum, backup),
    *(prune, retention_group),
    *(migrate, export),
    ui_cmd,
):
    cli.add_command(_command)

# Last, so that every command registered above also takes --db after its name.
for _command in cli.commands.values():
    accept_db_after_command(_command)
