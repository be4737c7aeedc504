"""Shared helpers of the reliability battery: child processes, file hashes, raw checks."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import apsw

from sqlstore import Message, Part, Session, SQLiteStore

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "child.py"


def child_env() -> dict[str, str]:
    """Return the environment for a child process that imports sqlstore from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def spawn(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    """Start ``child.py`` with ``args``; stdout is a text pipe read line by line."""
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        **kwargs,
    )


def run_child(*args: str, timeout: float = 120.0, **kwargs: object) -> str:
    """Run ``child.py`` to completion and return its stdout; fail with its stderr otherwise."""
    proc = subprocess.run(  # type: ignore[call-overload]
        [sys.executable, str(CHILD), *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout,
        **kwargs,
    )
    assert proc.returncode == 0, f"child {args} failed ({proc.returncode}):\n{proc.stderr}"
    return str(proc.stdout)


def file_digests(path: str | os.PathLike[str]) -> dict[str, str | None]:
    """Return the SHA-256 of the database file and of its -wal and -journal.

    An absent and an empty side file are the same (None): both mean "no content",
    and SQLite may leave an empty ``-wal`` behind after a refused open.
    """
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-journal"):
        name = os.fspath(path) + suffix
        if os.path.exists(name) and (suffix == "" or os.path.getsize(name) > 0):
            out[suffix] = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        else:
            out[suffix] = None
    return out


def integrity(path: str | os.PathLike[str]) -> list[str]:
    """Return the rows of ``PRAGMA integrity_check`` on a raw connection (``["ok"]`` if sound)."""
    conn = apsw.Connection(os.fspath(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        return [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def chattr(flag: str, target: Path) -> bool:
    """Run ``chattr FLAG TARGET`` (e.g. ``+i``); False when chattr is missing or refuses."""
    try:
        done = subprocess.run(["chattr", flag, str(target)], capture_output=True, check=False)
    except FileNotFoundError:
        return False
    return done.returncode == 0


def save_hostile_blobs(db: Path, names: list[str], session_id: str = "evil") -> bytes:
    """Save one session whose message claims blob file names ``names``; return the bytes."""
    data = b"PWNED-" + session_id.encode()
    with SQLiteStore(db) as store:
        session = Session.new(session_id)
        session.messages.append(
            Message(
                role="user",
                text="see",
                parts=[Part(kind="image", mime_type="image/png", data=data) for _ in names],
                extra={
                    "runlog_type": "attachment",
                    "runlog_images": [{} for _ in names],
                    "runlog_blobs": list(names),
                },
            )
        )
        store.sessions.save(session)
    return data


def run_in_pty(
    args: list[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    answer: bytes = b"",
    timeout: float = 60.0,
) -> tuple[int, bytes]:
    """Run a command with stdin, stdout and stderr on a real pseudo-terminal.

    click strips escape sequences only when output is not a terminal, so escapes
    can be tested only like this. ``answer`` is typed once the command runs (for
    a prompt). Returns the exit status and everything the terminal received.
    """
    import pty
    import select
    import time

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [os.fspath(a) for a in args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=child_env(),
            start_new_session=True,
        )
    finally:
        os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        if answer:
            os.write(master, answer)
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
            raise AssertionError(f"{args} did not finish within {timeout} s: {bytes(out)!r}")
        return proc.wait(timeout=timeout), bytes(out)
    finally:
        os.close(master)
