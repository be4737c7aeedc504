"""The shared state of one ``sqlstore`` invocation, and the helpers every command uses.

For the authors of command modules (``cli/retention_cmd.py``, ``cli/migrate_cmd.py``)::

    from .context import CliContext, json_option, pass_cli

    @click.command()
    @json_option
    @pass_cli
    def prune(cli: CliContext, ...) -> None:
        \"\"\"Delete stale sessions.

        Example:

            sqlstore prune --older-than 30d --dry-run
        \"\"\"
        with cli.open_store() as store:        # read-write; creates nothing if missing
            report = retention.sweep(store, plan)
        cli.emit(report.to_json(), human_lines)

* ``cli.db`` is the database path (``--db``, env ``SQLSTORE_DB``, default
  ``./sessions.db``; a ``sqlite:///`` URL's options are in ``cli.db_options``);
  ``cli.json`` is True when ``--json`` was given globally *or* on the command
  (put ``@json_option`` on every command); ``cli.verbose`` counts ``-v``.
* ``cli.open_store(readonly=True)`` opens an *existing* file and never creates
  one: a missing file raises ``sqlstore.errors.StoreMissing`` (with a
  hint to run ``sqlstore init`` or pass ``--db``). ``cli.open_store(create=True)``
  (only ``sqlstore init`` and importers such as ``migrate``) creates the file.
* Raise ``sqlstore.errors.StoreError`` (with ``hint=``) for user-facing failures:
  the group in ``cli.main`` prints ``Error: …`` / ``Hint: …`` and exits 1.
  Use ``click.UsageError``/``click.BadParameter`` for bad flags (exit 2).
* :data:`DURATION` is a click parameter type for ``30d``, ``12h``, ``90m``,
  ``1w`` (it uses ``retention.policy.parse_duration``); use :class:`AsciiIntRange`
  and :class:`AsciiFloatRange` for numbers, never ``int``/``click.INT`` (they
  read non-ASCII digits; ``tests/test_cli_numbers.py`` checks every option).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from sqlstore.errors import InvalidOption, StoreError, StoreMissing, UnsafePath
from sqlstore.retention import parse_duration
from sqlstore.sqlite import SQLiteStore
from sqlstore.sqlite.connection import check_path_text, check_regular_file
from sqlstore.sqlite.options import SQLITE_URL_PREFIX, parse_sqlite_url

from . import render

DEFAULT_DB = "sessions.db"
"""The database file used when neither ``--db`` nor ``SQLSTORE_DB`` is given."""

DB_ENVVAR = "SQLSTORE_DB"


class Refused(StoreError):
    """The CLI refused an operation that needs a confirmation it could not get."""


@dataclass
class CliContext:
    """Global options of one invocation (``ctx.obj``), plus store and output helpers."""

    db: Path = field(default_factory=lambda: Path(DEFAULT_DB))
    db_options: dict[str, Any] = field(default_factory=dict)
    json: bool = False
    verbose: int = 0

    def require_existing(self) -> Path:
        """Return the database path if it names an existing file.

        Raises:
            StoreMissing: there is no file at the path (nothing is created).
            UnsafePath: the path is a directory, a FIFO or another non-regular file,
                or is not valid UTF-8.
        """
        check_path_text(os.fspath(self.db))
        if os.path.isdir(self.db):
            raise UnsafePath(
                f"{self.db} is a directory, not a database file",
                hint="Pass the path of the database file with --db (or set SQLSTORE_DB).",
            )
        if not os.path.exists(self.db):
            raise StoreMissing(
                f"no database at {self.db}",
                hint=(
                    f"Create it with `sqlstore --db {self.db} init`, or point at an existing "
                    "file with --db PATH (or SQLSTORE_DB)."
                ),
            )
        check_regular_file(os.fspath(self.db))  # a FIFO would block every open
        return self.db

    def open_store(self, *, readonly: bool = False, create: bool = False) -> SQLiteStore:
        """Open the SQLite store at ``db``.

        Without ``create`` the file must already exist (nothing is created).
        ``readonly`` opens it without writing anything (no schema creation or
        upgrade; writes raise ``StoreReadOnly``).

        Raises:
            StoreMissing: the file does not exist and ``create`` is False.
            StoreError: the backend refused the file (corrupt, foreign, too new, ...).
        """
        if not create:
            self.require_existing()
        return SQLiteStore(
            os.fspath(self.db),
            create=create,
            readonly=readonly and not create,
            **self.db_options,
        )

    def emit(self, doc: Any, human: Iterable[str] | Callable[[], Iterable[str]]) -> None:
        """Print ``doc`` as JSON when ``--json`` is on, else the human lines."""
        if self.json:
            click.echo(render.json_text(doc, indent=2))
            return
        lines = human() if callable(human) else human
        for line in lines:
            render.echo(line)

    def note(self, message: str) -> None:
        """Print a diagnostic line to stderr when ``-v`` was given."""
        if self.verbose:
            render.echo(message, err=True)


def get_cli(ctx: click.Context | None = None) -> CliContext:
    """Return the invocation's :class:`CliContext`, creating a default one if needed."""
    ctx = ctx or click.get_current_context()
    return ctx.ensure_object(CliContext)


pass_cli = click.make_pass_decorator(CliContext, ensure=True)
"""Decorate a command callback to receive the :class:`CliContext` as its first argument."""


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        get_cli(ctx).json = True


json_option = click.option(
    "--json",
    "json_output",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_set_json,
    help="Print machine-readable JSON (same as the global --json).",
)
"""Per-command ``--json`` flag; it sets ``CliContext.json`` and passes no argument."""


class NonEmptyPath(click.Path):
    """A click path that refuses the empty string (``Path("")`` would silently be ``.``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the path; an empty value is a usage error (exit 2)."""
        if isinstance(value, str) and not value:
            self.fail("is empty; give a path (for example sessions.db)", param, ctx)
        return super().convert(value, param, ctx)


class DbPath(NonEmptyPath):
    """``--db``: a SQLite file, as a path or a ``sqlite:///`` URL with options.

    ``--db 'sqlite:///x.db?durability=normal'`` opens ``x.db`` with those options
    (checked as :func:`sqlstore.open` checks them; they go to ``cli.db_options``).
    Any other URL (``redis://``, ``sqlite://host``) is a usage error: ``--db``
    names a file, and read as a path it would create a directory ``redis:``.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the file's path; a bad URL or option is a usage error (exit 2)."""
        options: dict[str, Any] = {}
        if isinstance(value, str) and value.startswith(SQLITE_URL_PREFIX):
            try:
                value, options = parse_sqlite_url(value)
            except InvalidOption as exc:
                self.fail(f"{exc}. Hint: {exc.hint}" if exc.hint else str(exc), param, ctx)
        elif isinstance(value, str) and ("://" in value or value.startswith("sqlite:")):
            self.fail(
                f"{value!r} is not a SQLite file; --db takes a path or a "
                "sqlite:///relative.db or sqlite:////absolute.db URL. Hint: `sqlstore migrate "
                "--to`/`--from` take redis:// URLs.",
                param,
                ctx,
            )
        path = super().convert(value, param, ctx)
        if ctx is not None:
            get_cli(ctx).db_options = options
        return path


def _set_db(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        get_cli(ctx).db = value


def accept_db_after_command(command: click.Command) -> None:
    """Give ``command`` (and each command of a group) its own ``--db``, as ``--json`` is.

    ``sqlstore ls --db x.db`` then means ``sqlstore --db x.db ls``; given in both
    places, the one after the command wins (it is parsed last).
    """
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_db_after_command(sub)
    if not any("--db" in param.opts for param in command.params):
        command.params.append(
            click.Option(
                ["--db"],
                type=DbPath(path_type=Path),
                expose_value=False,
                callback=_set_db,
                help="The database file (same as the global --db).",
            )
        )


class DurationType(click.ParamType):  # type: ignore[type-arg]  # generic in new click only
    """A click parameter for durations such as ``30d``, ``12h``, ``90m`` or ``1w``."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return a ``timedelta``; a malformed value is a usage error (exit 2)."""
        if isinstance(value, timedelta):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(f"{exc} (write e.g. 30d, 12h, 90m, 1w)", param, ctx)


DURATION = DurationType()


_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")


class AsciiIntRange(click.IntRange):
    """A click integer (with optional bounds) written in ASCII digits only.

    Python's ``int()`` (and so ``click.INT``) also reads other scripts' digits
    (``--limit ٣`` was 3), ``1_000`` and surrounding blanks; every integer option
    of the CLI takes ``[+-]?[0-9]+`` and nothing else (a usage error, exit 2).
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the int; anything but ASCII digits (with a sign) is a usage error."""
        if isinstance(value, str) and not _ASCII_INT.fullmatch(value):
            self.fail(f"{value!r} is not a whole number (ASCII digits 0-9 only)", param, ctx)
        return super().convert(value, param, ctx)


class AsciiFloatRange(click.FloatRange):
    """A click float (with optional bounds) in ASCII only: no ``nan``, ``inf``, non-ASCII digits."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Return the float; anything but an ASCII decimal number is a usage error."""
        if isinstance(value, str) and not _ASCII_FLOAT.fullmatch(value):
            self.fail(f"{value!r} is not a number (ASCII digits, e.g. 0.1)", param, ctx)
        return super().convert(value, param, ctx)


def stdin_is_terminal() -> bool:
    """Return True when standard input is an interactive terminal."""
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
