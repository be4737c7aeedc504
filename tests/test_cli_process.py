"""The installed console script in real processes: `sqlstore`, `python -m sqlstore`,
`events --follow` across processes with SIGINT, and `rm` confirming on a real terminal."""

from __future__ import annotations

import json
import os
import pty
import queue
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest

from sqlstore import Event, Session, SQLiteStore

TIMEOUT_S = 30.0
"""Upper bound for any wait on a child process (never a timing assertion)."""


def console_script() -> str:
    """Return the path of the installed `sqlstore` console script."""
    beside = Path(sys.executable).parent / "sqlstore"
    found = str(beside) if beside.exists() else shutil.which("sqlstore")
    assert found, "the sqlstore console script is not installed (pip install -e .)"
    return found


def env_without_db() -> dict[str, str]:
    """Return the environment without SQLSTORE_DB."""
    env = dict(os.environ)
    env.pop("SQLSTORE_DB", None)
    return env


def test_console_script_init_ls_and_errors(tmp_path: Path) -> None:
    """The installed `sqlstore` creates, lists, and reports errors with the right exit codes."""
    exe = console_script()
    db = str(tmp_path / "cs.db")
    done = subprocess.run(
        [exe, "--db", db, "init"], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("one", title="hello"))
    listed = subprocess.run(
        [exe, "--db", db, "ls", "--json"], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == ["one"]
    missing = subprocess.run(
        [exe, "--db", db, "show", "two"], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith("Error: session not found")
    assert "Hint: " in missing.stderr
    usage = subprocess.run([exe, "bogus"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert usage.returncode == 2


def test_python_dash_m_sqlstore(tmp_path: Path) -> None:
    """`python -m sqlstore` runs the same CLI (version, env var database)."""
    version = subprocess.run(
        [sys.executable, "-m", "sqlstore", "--version"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert version.returncode == 0 and "sqlstore, version" in version.stdout
    env = env_without_db() | {"SQLSTORE_DB": str(tmp_path / "m.db")}
    init = subprocess.run(
        [sys.executable, "-m", "sqlstore", "--json", "init"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )
    assert init.returncode == 0, init.stderr
    assert json.loads(init.stdout)["created"] is True
    assert (tmp_path / "m.db").exists()


def read_lines(stream: IO[str], out: queue.Queue[str | None]) -> None:
    """Copy the lines of ``stream`` into ``out`` until EOF (then put None)."""
    for line in stream:
        out.put(line)
    out.put(None)


def next_line(lines: queue.Queue[str | None]) -> dict[str, object]:
    """Return the next JSON line from the follower (fail if it ends or stalls)."""
    line = lines.get(timeout=TIMEOUT_S)
    assert line is not None, "the follower exited early"
    doc: dict[str, object] = json.loads(line)
    return doc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_events_follow_sees_other_process_and_stops_on_signal(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """`events --follow` in a child process prints appends made here, and exits 0 on a signal."""
    db = tmp_path / "f.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("s"))
        store.events.append_event("s", Event(type="turn.start", text="before"))
    with subprocess.Popen(
        [console_script(), "--db", str(db), "events", "s", "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_without_db(),
    ) as child:
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=read_lines, args=(child.stdout, lines), daemon=True)
        reader.start()
        try:
            first = next_line(lines)
            assert first["event"] == Event(type="turn.start", text="before").to_json()
            with SQLiteStore(db) as store:
                cursor = store.events.append_event("s", Event(type="message.delta", text="after"))
            second = next_line(lines)
            assert second["cursor"] == cursor
            assert second["event"]["text"] == "after"  # type: ignore[index]
            child.send_signal(sig)
            assert child.wait(timeout=TIMEOUT_S) == 0
            assert lines.get(timeout=TIMEOUT_S) is None
            assert child.stderr is not None
            assert "Traceback" not in child.stderr.read()
        finally:
            if child.poll() is None:
                child.kill()
            reader.join(timeout=TIMEOUT_S)


def run_on_terminal(args: list[str], answer: str) -> tuple[int, str]:
    """Run the console script with a pseudo-terminal as stdin/stdout; type ``answer``."""
    controller, terminal = pty.openpty()
    child = subprocess.Popen(
        [console_script(), *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=env_without_db(),
        close_fds=True,
    )
    os.close(terminal)
    output = b""
    try:
        while b"?" not in output:
            output += os.read(controller, 1024)
        os.write(controller, answer.encode() + b"\n")
        code = child.wait(timeout=TIMEOUT_S)
        while True:
            try:
                chunk = os.read(controller, 1024)
            except OSError:
                break  # the terminal closed with the child
            if not chunk:
                break
            output += chunk
    finally:
        os.close(controller)
        if child.poll() is None:
            child.kill()
            child.wait()
    return code, output.decode(errors="replace")


@pytest.mark.parametrize(("answer", "deleted"), [("y", True), ("n", False)])
def test_rm_asks_on_a_terminal(tmp_path: Path, answer: str, deleted: bool) -> None:
    """On a terminal `rm` asks; `y` deletes (exit 0), `n` keeps the session (exit 1)."""
    db = tmp_path / "t.db"
    with SQLiteStore(db) as store:
        store.sessions.save(Session.new("victim"))
    code, output = run_on_terminal(["--db", str(db), "rm", "victim"], answer)
    assert "Delete 1 session(s): victim?" in output
    assert code == (0 if deleted else 1)
    with SQLiteStore(db) as store:
        assert [s.id for s in store.sessions.list()] == ([] if deleted else ["victim"])
