"""CliRunner tests of the session commands: init, ls, show, events, audit, rm, global options."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import apsw
import click
import pytest
from click.testing import CliRunner, Result
from freezegun import freeze_time

import cli.session_cmd as session_cmd
import sqlstore
from cli.context import DURATION
from cli.main import cli
from sqlstore import (
    Event,
    Kind,
    Message,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    ToolCall,
    ToolCallRecord,
    ToolResult,
)
from sqlstore import snapshot as snapshot_codec


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Invoke the CLI in-process."""
    return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)


def conversation_session(session_id: str) -> Session:
    """Return a running session with a prompt, a tool call and an error result."""
    s = Session.new(session_id, title="fix the build", model_id="m-1", provider_id="p")
    s.begin_turn()
    s.record_user_prompt("Please fix the build")
    s.record_assistant(
        Message(
            role="assistant",
            text="Running the tests",
            tool_calls=[ToolCall(id="c1", name="bash", args='{"cmd": "make"}')],
        )
    )
    s.record_tool_results([ToolResult(call_id="c1", content="make: error", is_error=True)])
    return s


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    """A database with sessions s1 (running, events, audit) and s2 (idle) — s2 newest."""
    path = tmp_path / "sessions.db"
    with SQLiteStore(path) as store:
        store.sessions.save(conversation_session("s1"))
        store.events.append_event("s1", Event(type="turn.start", text="t0"))
        store.events.append_event("s1", Event(type="message.delta", text="t1"))
        store.events.append_gap("s1", "lost records")
        store.events.append_event("s1", Event(type="tool.call", text="t2"))
        store.audit.record(
            ToolCallRecord("s1", call_id="c1", tool="bash", args="{}", result="x", is_error=True)
        )
        store.audit.record(ToolCallRecord("s1", call_id="c2", tool="read", args="{}", result="y"))
        store.sessions.save(Session.new("s2", kind=Kind.MAIN))
    yield path


def ls_ids(result: Result) -> list[str]:
    """Return the ids of a `ls --json` result."""
    assert result.exit_code == 0, result.output
    return [row["id"] for row in json.loads(result.stdout)]


# -- global options ------------------------------------------------------------------------


def test_version_prints_package_version() -> None:
    """`--version` prints the package version and exits 0."""
    result = run("--version")
    assert result.exit_code == 0
    assert sqlstore.__version__ in result.stdout


def test_db_from_env_var(db: Path) -> None:
    """SQLSTORE_DB selects the database when --db is absent."""
    result = run("--json", "ls", env={"SQLSTORE_DB": str(db)})
    assert ls_ids(result) == ["s2", "s1"]


def test_db_option_beats_env_var(db: Path, tmp_path: Path) -> None:
    """An explicit --db wins over SQLSTORE_DB."""
    result = run("--db", str(db), "--json", "ls", env={"SQLSTORE_DB": str(tmp_path / "x.db")})
    assert ls_ids(result) == ["s2", "s1"]


def test_default_db_is_sessions_db_in_cwd(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --db or SQLSTORE_DB the CLI uses ./sessions.db."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SQLSTORE_DB", raising=False)
    assert ls_ids(run("--json", "ls")) == ["s2", "s1"]


def test_json_global_and_per_command_agree(db: Path) -> None:
    """`--json` before the command and after it print the same document."""
    before = run("--db", str(db), "--json", "ls")
    after = run("--db", str(db), "ls", "--json")
    assert before.exit_code == after.exit_code == 0
    assert before.stdout == after.stdout
    assert json.loads(before.stdout)[0]["id"] == "s2"


def test_db_is_accepted_after_the_command(db: Path, tmp_path: Path) -> None:
    """`sqlstore ls --db X` reads X, as `sqlstore --db X ls` does, and wins over the global one."""
    missing = str(tmp_path / "missing.db")
    after = run("ls", "--db", str(db), "--json", env={"SQLSTORE_DB": missing})
    assert after.exit_code == 0, after.output
    assert ls_ids(after) == ["s2", "s1"]
    both = run("--db", missing, "ls", "--db", str(db), "--json")
    assert ls_ids(both) == ["s2", "s1"]
    wrong = run("--db", str(db), "ls", "--db", missing)
    assert wrong.exit_code == 1
    assert "missing.db" in wrong.stderr


def test_db_after_the_command_on_every_command() -> None:
    """Every command, also inside the retention group, takes `--db` after its name."""

    def commands(group: click.Group) -> Iterator[click.Command]:
        for command in group.commands.values():
            yield command
            if isinstance(command, click.Group):
                yield from commands(command)

    for command in commands(cli):
        assert any("--db" in param.opts for param in command.params), command.name


def test_db_after_a_group_subcommand(db: Path) -> None:
    """`sqlstore retention history --db X` reads X (and names X when it is missing)."""
    missing = str(db.parent / "missing.db")
    result = run("--db", missing, "retention", "history", "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    wrong = run("--db", str(db), "retention", "history", "--db", missing)
    assert wrong.exit_code == 1
    assert "missing.db" in wrong.stderr


def test_verbose_prints_diagnostics_on_stderr(db: Path) -> None:
    """`-v` adds diagnostic lines on stderr and leaves stdout machine-readable."""
    result = run("--db", str(db), "-v", "--json", "ls")
    assert result.exit_code == 0
    assert "page:" in result.stderr
    assert [r["id"] for r in json.loads(result.stdout)] == ["s2", "s1"]


def test_unknown_command_is_usage_error() -> None:
    """An unknown command exits 2 (usage error)."""
    assert run("frobnicate").exit_code == 2


def test_missing_argument_is_usage_error(db: Path) -> None:
    """`show` without an id exits 2."""
    assert run("--db", str(db), "show").exit_code == 2


# -- init ----------------------------------------------------------------------------------


def test_init_creates_then_checks(tmp_path: Path) -> None:
    """`init` creates a sqlstore file (0600) and a second `init` reports the existing one."""
    path = tmp_path / "new" / "s.db"
    first = run("--db", str(path), "--json", "init")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout) == {"db": str(path), "created": True}
    assert path.stat().st_mode & 0o777 == 0o600
    second = run("--db", str(path), "init")
    assert second.exit_code == 0
    assert "Checked existing" in second.stdout
    with SQLiteStore(path, create=False) as store:
        assert store.sessions.list() == []


def test_init_refuses_foreign_database(tmp_path: Path) -> None:
    """`init` on another application's SQLite file fails with a hint and changes nothing."""
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    result = run("--db", str(path), "init")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert "Hint: " in result.stderr


# -- ls ------------------------------------------------------------------------------------


def test_ls_table_lists_newest_first(db: Path) -> None:
    """The human table has a header and rows newest first."""
    result = run("--db", str(db), "ls")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATE", "KIND"]
    assert [line.split()[0] for line in lines[1:]] == ["s2", "s1"]
    assert "fix the build" in lines[2]


def test_ls_json_rows_are_session_meta(db: Path) -> None:
    """`ls --json` prints the inventory rows as JSON objects."""
    rows = json.loads(run("--db", str(db), "ls", "--json").stdout)
    assert rows[1]["state"] == "running"
    assert rows[1]["title"] == "fix the build"
    assert set(rows[0]) >= {"id", "modified_at", "version", "kind", "owner", "turns"}


def test_ls_filters_state_and_kind(db: Path) -> None:
    """--state and --kind (repeatable) keep only matching rows."""
    with SQLiteStore(db) as store:
        child = Session.new(
            "c1",
            kind=Kind.SUBAGENT,
            relationship=Relationship(parent_session_id="s1", call_id="c1"),
        )
        child.begin_turn()
        child.fail("boom")
        store.sessions.save(child)
    base = ("--db", str(db), "--json", "ls")
    assert ls_ids(run(*base, "--state", "failed")) == ["c1"]
    assert ls_ids(run(*base, "--state", "idle", "--state", "running")) == ["s2", "s1"]
    assert ls_ids(run(*base, "--kind", "subagent")) == ["c1"]
    assert ls_ids(run(*base, "--kind", "main", "--state", "running")) == ["s1"]
    assert run(*base, "--state", "bogus").exit_code == 2


def test_ls_owner_filter(db: Path) -> None:
    """--owner matches the subject under any issuer; --issuer narrows to one identity."""
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("a1", owner=Principal(issuer="idp-a", subject="alice")))
        store.sessions.save(Session.new("a2", owner=Principal(issuer="idp-b", subject="alice")))
        store.sessions.save(Session.new("b1", owner=Principal(issuer="idp-a", subject="bob")))
    base = ("--db", str(db), "--json", "ls")
    assert ls_ids(run(*base, "--owner", "alice")) == ["a2", "a1"]
    assert ls_ids(run(*base, "--owner", "alice", "--issuer", "idp-a")) == ["a1"]
    assert ls_ids(run(*base, "--owner", "carol")) == []
    assert run(*base, "--issuer", "idp-a").exit_code == 2


def test_ls_age_filters(tmp_path: Path) -> None:
    """--older-than and --newer-than select by last write time relative to now."""
    path = tmp_path / "aged.db"
    with freeze_time("2025-01-01T00:00:00Z"), SQLiteStore(path) as store:
        store.sessions.save(Session.new("old"))
    with freeze_time("2025-01-09T00:00:00Z"), SQLiteStore(path) as store:
        store.sessions.save(Session.new("mid"))
    with freeze_time("2025-01-10T00:00:00Z"), SQLiteStore(path) as store:
        store.sessions.save(Session.new("new"))
    base = ("--db", str(path), "--json", "ls")
    with freeze_time("2025-01-10T06:00:00Z"):
        assert ls_ids(run(*base, "--older-than", "1w")) == ["old"]
        assert ls_ids(run(*base, "--older-than", "12h")) == ["mid", "old"]
        assert ls_ids(run(*base, "--newer-than", "12h")) == ["new"]
        assert ls_ids(run(*base, "--newer-than", "2d")) == ["new", "mid"]
        assert ls_ids(run(*base, "--newer-than", "30d", "--older-than", "90m")) == [
            "new",
            "mid",
            "old",
        ]
        assert ls_ids(run(*base, "--older-than", "2d", "--newer-than", "30d")) == ["old"]


def test_ls_limit_and_paging(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ls` pages through the store (small pages) and stops at --limit; 0 shows all."""
    monkeypatch.setattr(session_cmd, "LS_PAGE_SIZE", 2)
    with SQLiteStore(db) as store:
        for i in range(5):
            store.sessions.save(Session.new(f"x{i}"))
    base = ("--db", str(db), "--json", "ls")
    assert ls_ids(run(*base, "--limit", "0")) == ["x4", "x3", "x2", "x1", "x0", "s2", "s1"]
    assert ls_ids(run(*base, "--limit", "3")) == ["x4", "x3", "x2"]
    human = run("--db", str(db), "ls", "--limit", "3")
    assert "first 3 shown; 7 stored" in human.stdout


def test_ls_empty_store_says_so(tmp_path: Path) -> None:
    """An empty store prints a friendly line, and `[]` with --json."""
    path = tmp_path / "empty.db"
    assert run("--db", str(path), "init").exit_code == 0
    assert "No sessions" in run("--db", str(path), "ls").stdout
    assert json.loads(run("--db", str(path), "ls", "--json").stdout) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("1w", timedelta(weeks=1)),
    ],
)
def test_duration_param_accepts_units(text: str, expected: timedelta) -> None:
    """The duration parameter type reads 30d, 12h, 90m and 1w."""
    assert DURATION.convert(text, None, None) == expected


def test_bad_duration_is_usage_error(db: Path) -> None:
    """A malformed duration exits 2 with a message naming the accepted forms."""
    result = run("--db", str(db), "ls", "--older-than", "soon")
    assert result.exit_code == 2
    assert "30d" in result.stderr
    with pytest.raises(click.BadParameter):
        DURATION.convert("10x", None, None)


# -- show ----------------------------------------------------------------------------------


def test_show_prints_summary_and_conversation(db: Path) -> None:
    """`show` prints the summary fields and every message with tool calls and results."""
    result = run("--db", str(db), "show", "s1")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "title" in out and "fix the build" in out
    assert "state" in out and "running" in out
    assert "Please fix the build" in out
    assert '-> bash({"cmd": "make"})' in out
    assert "<- c1 ERROR: make: error" in out


def test_show_json_is_the_snapshot(db: Path) -> None:
    """`show --json` prints exactly the snapshot JSON of the stored session."""
    result = run("--db", str(db), "show", "s1", "--json")
    assert result.exit_code == 0
    with SQLiteStore(db) as store:
        expected = snapshot_codec.to_json(store.sessions.load("s1"))
    assert json.loads(result.stdout) == expected
    assert json.loads(result.stdout)["v"] == "sqlstore-session/1"


def test_show_missing_session_is_error_with_hint(db: Path) -> None:
    """An unknown id prints Error and Hint on stderr and exits 1."""
    result = run("--db", str(db), "show", "nope")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines()[0] == "Error: session not found: 'nope'"
    assert "Hint: " in result.stderr and "sqlstore ls" in result.stderr


# -- events --------------------------------------------------------------------------------


def event_lines(result: Result) -> list[dict[str, object]]:
    """Parse the JSON Lines of an `events` result."""
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_events_prints_json_lines_with_cursors(db: Path) -> None:
    """Every record (gaps included) is one JSON line carrying its cursor."""
    records = event_lines(run("--db", str(db), "events", "s1"))
    assert [r["kind"] for r in records] == ["event", "event", "gap", "event"]
    assert records[2]["gap_reason"] == "lost records"
    assert all(isinstance(r["cursor"], str) and r["cursor"] for r in records)
    assert records[0]["event"]["type"] == "turn.start"  # type: ignore[index]


def test_events_after_cursor_resumes_strictly_after(db: Path) -> None:
    """--after a record's cursor prints only the records after it."""
    records = event_lines(run("--db", str(db), "events", "s1"))
    rest = event_lines(run("--db", str(db), "events", "s1", "--after", str(records[1]["cursor"])))
    assert rest == records[2:]
    assert (
        event_lines(run("--db", str(db), "events", "s1", "--after", str(records[-1]["cursor"])))
        == []
    )


def test_events_limit_and_type(db: Path) -> None:
    """--limit caps the records; --type keeps only events of that type (repeatable)."""
    limited = event_lines(run("--db", str(db), "events", "s1", "--limit", "2"))
    assert [r["event"]["text"] for r in limited] == ["t0", "t1"]  # type: ignore[index]
    typed = event_lines(
        run("--db", str(db), "events", "s1", "--type", "tool.call", "--type", "turn.start")
    )
    assert [r["event"]["type"] for r in typed] == ["turn.start", "tool.call"]  # type: ignore[index]
    one = event_lines(run("--db", str(db), "events", "s1", "--type", "tool.call", "--limit", "1"))
    assert len(one) == 1


def test_events_follow_ends_at_limit(db: Path) -> None:
    """--follow with --limit returns once the budget is spent (exit 0)."""
    records = event_lines(run("--db", str(db), "events", "s1", "--follow", "--limit", "3"))
    assert len(records) == 3


def test_events_bad_cursor_is_error_with_hint(db: Path) -> None:
    """A malformed cursor exits 1 with Error and Hint lines."""
    result = run("--db", str(db), "events", "s1", "--after", "not-a-cursor")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert "Hint: " in result.stderr


def test_events_unknown_session_is_empty(db: Path) -> None:
    """A session without a log prints nothing and exits 0 (the log contract)."""
    assert event_lines(run("--db", str(db), "events", "nobody")) == []


# -- audit ---------------------------------------------------------------------------------


def test_audit_table_and_filters(db: Path) -> None:
    """`audit` lists records in order; --tool and --errors filter them."""
    result = run("--db", str(db), "audit", "s1")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:2] == ["AT", "(UTC)"]
    assert "bash" in lines[1] and "error" in lines[1]
    assert "read" in lines[2] and "ok" in lines[2]
    errors = json.loads(run("--db", str(db), "audit", "s1", "--errors", "--json").stdout)
    assert [r["call_id"] for r in errors] == ["c1"]
    tools = json.loads(run("--db", str(db), "--json", "audit", "s1", "--tool", "read").stdout)
    assert [r["tool"] for r in tools] == ["read"]
    assert "No tool calls" in run("--db", str(db), "audit", "s2").stdout


# -- rm ------------------------------------------------------------------------------------


def test_rm_yes_deletes_snapshot_events_and_audit(db: Path) -> None:
    """`rm --yes` removes the session with its events and audit rows."""
    result = run("--db", str(db), "--json", "rm", "s1", "--yes")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"deleted": ["s1"]}
    with SQLiteStore(db) as store:
        assert [s.id for s in store.sessions.list()] == ["s2"]
        assert list(store.events.read("s1")) == []
        assert store.audit.list("s1") == []


def test_rm_refuses_without_yes_when_not_a_terminal(db: Path) -> None:
    """Without --yes and without a terminal, `rm` refuses (exit 1) and deletes nothing."""
    result = run("--db", str(db), "rm", "s1", input="y\n")
    assert result.exit_code == 1
    assert "Error: refusing" in result.stderr
    assert "--yes" in result.stderr
    with SQLiteStore(db) as store:
        assert {s.id for s in store.sessions.list()} == {"s1", "s2"}


def test_rm_unknown_id_deletes_nothing(db: Path) -> None:
    """If any id is unknown, `rm` fails before deleting the others."""
    result = run("--db", str(db), "rm", "s1", "ghost", "--yes")
    assert result.exit_code == 1
    assert "ghost" in result.stderr
    with SQLiteStore(db) as store:
        assert {s.id for s in store.sessions.list()} == {"s1", "s2"}


def test_rm_needs_an_id(db: Path) -> None:
    """`rm` without ids is a usage error."""
    assert run("--db", str(db), "rm", "--yes").exit_code == 2


# -- read-only commands never create a file ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["ls"],
        ["show", "s1"],
        ["events", "s1"],
        ["events", "s1", "--follow"],
        ["audit", "s1"],
        ["check"],
        ["stats"],
        ["backup", "copy.db"],
        ["rm", "s1", "--yes"],
        ["vacuum"],
    ],
)
def test_commands_on_missing_file_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """A command other than init on a missing database exits 1 with a hint and creates no file."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "sub" / "missing.db"
    result = run("--db", str(target), *args)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: no database at {target}")
    assert "Hint: " in result.stderr and "init" in result.stderr
    assert sorted(os.listdir(tmp_path)) == []


def test_directory_as_db_is_error(tmp_path: Path) -> None:
    """Pointing --db at a directory is an error with a hint, not a traceback."""
    result = run("--db", str(tmp_path), "ls")
    assert result.exit_code == 1
    assert "directory" in result.stderr and "Hint: " in result.stderr


def test_corrupt_file_is_error_with_hint(tmp_path: Path) -> None:
    """A file that is not SQLite gives Error/Hint and exit 1 (StoreCorrupt)."""
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database at all" * 100)
    result = run("--db", str(path), "ls")
    assert result.exit_code == 1
    assert "not a SQLite database" in result.stderr
    assert "Hint: " in result.stderr


def test_verbose_twice_prints_traceback_on_error(db: Path) -> None:
    """`-vv` adds the traceback of a store error to stderr."""
    result = run("--db", str(db), "-vv", "show", "nope")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert "Error: session not found" in result.stderr


# -- help ----------------------------------------------------------------------------------


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Return the argv path of every command and subcommand under ``group``."""
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found.extend(all_commands(command, (*prefix, name)))
    return found


def test_every_command_is_listed() -> None:
    """The group has every command of SPEC §8 (session, maintenance, retention, migration)."""
    names = set(cli.commands)
    assert {"init", "ls", "show", "events", "audit", "rm", "check", "stats", "vacuum"} <= names
    assert {"backup"} <= names


@pytest.mark.parametrize("path", [(), *all_commands(cli)], ids=lambda p: " ".join(p) or "sqlstore")
def test_every_command_has_help_with_example(path: tuple[str, ...]) -> None:
    """`--help` on every command and subcommand exits 0 and shows an example invocation."""
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.stdout
    assert "sqlstore " in result.stdout.split("Example", 1)[1]


def test_ls_restarts_when_inventory_changes_while_paging(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save by another store between pages restarts the listing without duplicates."""
    from sqlstore.sqlite.sessions import SQLiteSessions

    monkeypatch.setattr(session_cmd, "LS_PAGE_SIZE", 1)
    original = SQLiteSessions.page
    calls: list[int] = []

    def page_then_write(self: SQLiteSessions, *args: object, **kwargs: object) -> object:
        result = original(self, *args, **kwargs)  # type: ignore[arg-type]
        calls.append(1)
        if len(calls) == 1:
            with SQLiteStore(db) as other:  # a concurrent writer bumps the inventory
                other.sessions.save(Session.new("late"))
        return result

    monkeypatch.setattr(SQLiteSessions, "page", page_then_write)
    ids = ls_ids(run("--db", str(db), "--json", "ls"))
    assert sorted(ids) == ["late", "s1", "s2"]
    assert ids[0] == "s2"  # printed before the restart


def test_show_renders_ask_owner_relationship_and_error(db: Path) -> None:
    """`show` prints the pending ask, owner, relationship, labels and last error when set."""
    from sqlstore import Ask

    with SQLiteStore(db) as store:
        waiting = Session.new(
            "w1",
            kind=Kind.SUBAGENT,
            relationship=Relationship(parent_session_id="s1", call_id="c9"),
            owner=Principal(issuer="idp", subject="alice"),
            labels={"task": "t-7"},
        )
        waiting.begin_turn()
        waiting.pause_for_approval(Ask(ask_id="a1", tool="bash", args="{}", reason="rm -rf"))
        store.sessions.save(waiting)
        failed = Session.new("f1")
        failed.begin_turn()
        failed.fail("quota exceeded")
        store.sessions.save(failed)
    out = run("--db", str(db), "show", "w1").stdout
    assert "awaiting" in out
    assert "pending ask" in out and "bash" in out and "rm -rf" in out
    assert "alice@idp" in out
    assert "parent_session_id=s1" in out and "call_id=c9" in out
    assert "task=t-7" in out
    assert "quota exceeded" in run("--db", str(db), "show", "f1").stdout


def test_ls_never_cuts_long_ids(db: Path) -> None:
    """The ls table prints ids in full, however long, so they can be passed to `show`."""
    long_id = "session-" + "x" * 150
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new(long_id))
    assert long_id in run("--db", str(db), "ls").stdout


def test_render_helpers() -> None:
    """Byte sizes, one-line folding and tables render as documented."""
    from cli import render

    assert render.human_bytes(512) == "512 B"
    assert render.human_bytes(1536) == "1.5 KiB"
    assert render.human_bytes(3 * 1024**3) == "3.0 GiB"
    assert render.one_line("a\n  b\tc", 0) == "a b c"
    assert render.one_line("abcdef", 4) == "abc…"
    assert list(render.table(["A", "BB"], [["xyz", "1"]])) == ["A    BB", "xyz  1"]


MY_COMMANDS = ("init", "ls", "show", "events", "audit", "rm", "check", "stats", "vacuum", "backup")


@pytest.mark.parametrize("name", MY_COMMANDS)
def test_session_and_maintenance_commands_accept_json(name: str) -> None:
    """Each session and maintenance command takes --json itself, not only the global flag."""
    command = cli.commands[name]
    assert any("--json" in p.opts for p in command.params if isinstance(p, click.Option))


def test_show_and_ls_print_control_characters_as_escapes(tmp_path: Path) -> None:
    """Newlines and terminal escapes in stored text never break a line or reach the terminal."""
    path = tmp_path / "s.db"
    session = Session.new("x", title="two\nlines \x1b[31mred")
    session.labels["note"] = "a\nb"
    with SQLiteStore(path) as store:
        store.sessions.save(session)
    shown = run("--db", str(path), "show", "x")
    assert shown.exit_code == 0, shown.output
    assert "title         two\\nlines \\x1b[31mred" in shown.stdout
    assert "labels        note=a\\nb" in shown.stdout
    assert "\x1b" not in shown.stdout
    listed = run("--db", str(path), "ls")
    assert "two lines \\x1b[31mred" in listed.stdout and "\x1b" not in listed.stdout


def test_show_escapes_control_characters_in_the_conversation(tmp_path: Path) -> None:
    """Message text, tool names and ids with terminal escapes print as escapes in `show`."""
    path = tmp_path / "s.db"
    session = conversation_session("x")
    session.begin_turn()
    session.record_user_prompt("hi \x1b[2J\x1b]0;pwned\x07 there\r\nnext")
    with SQLiteStore(path) as store:
        store.sessions.save(session)
    shown = run("--db", str(path), "show", "x")
    assert shown.exit_code == 0, shown.output
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout and "\r" not in shown.stdout
    assert "  hi \\x1b[2J\\x1b]0;pwned\\x07 there" in shown.stdout
    assert "  next" in shown.stdout
