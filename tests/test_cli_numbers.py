"""Every number option of the CLI takes ASCII digits only (``--limit ٣`` was read as 3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli.context import AsciiFloatRange, AsciiIntRange
from cli.main import cli
from sqlstore import Session, SQLiteStore
from tests.test_cli_process import console_script, env_without_db

INT_OPTIONS = [
    ["ls", "--limit"],
    ["events", "x", "--limit"],
    ["prune", "--keep"],
    ["migrate", "--batch"],
    ["retention", "history", "--limit"],
    ["ui", "--port"],
]
BAD_INTS = ["٣", "\uff13", "1_0", " 3", "3 ", "0x10", "", "1e3"]
BAD_FLOATS = ["\u0660.\u0665", "nan", "inf", "0,5", "1_0.0", " 0.1"]


def _commands(group: click.Group, ctx: click.Context) -> list[click.Command]:
    found: list[click.Command] = [group]
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if isinstance(sub, click.Group):
            found += _commands(sub, ctx)
        elif sub is not None:
            found.append(sub)
    return found


def test_every_number_option_uses_the_ascii_types() -> None:
    """No command parses a number with click's INT/FLOAT (they accept non-ASCII digits)."""
    ctx = click.Context(cli)
    numbers = [
        (command.name, param.name, param.type)
        for command in _commands(cli, ctx)
        for param in command.params
        if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType))
        and not getattr(param, "count", False)  # -v counts; it takes no value to parse
    ]
    assert len(numbers) >= len(INT_OPTIONS) + 1  # the list below is not empty by accident
    for command, name, kind in numbers:
        assert isinstance(kind, (AsciiIntRange, AsciiFloatRange)), (command, name, kind)


@pytest.mark.parametrize("value", BAD_INTS)
@pytest.mark.parametrize("args", INT_OPTIONS, ids=lambda a: " ".join(a))
def test_a_non_ascii_or_odd_integer_is_a_usage_error(
    args: list[str], value: str, tmp_path: Path
) -> None:
    """Each integer option refuses other scripts' digits, underscores and blanks (exit 2)."""
    done = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.db"), *args, value])
    assert done.exit_code == 2, done.output
    assert "is not a whole number (ASCII digits 0-9 only)" in done.output
    assert args[-1] in done.output
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("value", BAD_FLOATS)
def test_a_non_ascii_or_non_finite_float_is_a_usage_error(value: str, tmp_path: Path) -> None:
    """``retention daemon --jitter`` refuses non-ASCII digits, nan and inf (exit 2)."""
    args = ["--db", str(tmp_path / "s.db"), "retention", "daemon", "--jitter", value]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    assert "is not a number" in done.output and "--jitter" in done.output


def test_ascii_integers_still_work(tmp_path: Path) -> None:
    """``--limit 2`` and ``--limit +2`` list two of three sessions; a range is still checked."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        for n in range(3):
            store.sessions.save(Session.new(f"s{n}"))
    runner = CliRunner()
    for value in ("2", "+2", "02"):
        done = runner.invoke(cli, ["--db", str(db), "ls", "--limit", value])
        assert done.exit_code == 0, done.output
        assert sum(line.startswith("s") for line in done.output.splitlines()) == 2
    done = runner.invoke(cli, ["--db", str(db), "ls", "--limit", "-1"])
    assert done.exit_code == 2 and "x>=0" in done.output


def test_console_script_refuses_arabic_indic_digits(tmp_path: Path) -> None:
    """The installed `sqlstore ls --limit ٣` exits 2 with a usage error, not a listing of 3."""
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("only"))
    done = subprocess.run(
        [console_script(), "--db", str(db), "ls", "--limit", "٣"],
        capture_output=True,
        text=True,
        env=env_without_db(),
        timeout=60,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "'٣' is not a whole number" in done.stderr and done.stdout == ""
