"""Operations on a full disk: `backup` and `prune` (issue 20, item 14).

A really full file system is a small tmpfs mounted in a private mount namespace
(``unshare -m``, so nothing outside the test sees it); a file-size limit
(``RLIMIT_FSIZE``, as in ``test_disk_full.py``) is the second way to run out of
room. On either, the installed console script must fail with a clear error and
a hint that fits the command — `backup` leaves no partial copy, `-journal`,
`-wal` or `-shm` behind, `prune` does not tell the user to run `sqlstore prune`
— and the source database stays sound.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sqlstore import Event, Session, SQLiteStore

from .helpers import integrity

TIMEOUT_S = 120.0
"""Upper bound for any child process (never a timing assertion)."""


def _exe() -> str:
    from tests.test_cli_process import console_script

    return console_script()


def _namespaces_work(directory: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {directory}"],
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    return probe.returncode == 0


def _in_small_fs(mount: Path, size: str, script: str) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) in a private mount namespace with a ``size`` tmpfs on ``mount``."""
    mount.mkdir(exist_ok=True)
    if not _namespaces_work(mount):
        pytest.skip("needs `unshare -m` and tmpfs mounts (a private mount namespace)")
    full = f"mount -t tmpfs -o size={size} tmpfs {shlex.quote(str(mount))} && {script}"
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", full], capture_output=True, text=True, timeout=TIMEOUT_S
    )


def _source(db: Path) -> None:
    with SQLiteStore(db, durability="normal") as store:
        store.sessions.save(Session.new("a"))
        for n in range(3_000):
            store.events.append_event("a", Event("message", text="x" * 300 + str(n)))


def _check_backup_failure(stderr: str) -> None:
    lines = stderr.splitlines()
    assert lines[0].startswith("Error: "), stderr
    assert "not an error" not in stderr
    assert "backup" in lines[0]
    hint = next(line for line in lines if line.startswith("Hint: "))
    assert "sqlstore prune" not in hint and "space" in hint


def test_backup_onto_a_full_file_system_leaves_nothing(tmp_path: Path) -> None:
    """`backup` onto a full tmpfs: exit 1, a backup-specific error and hint, no DEST files left."""
    src = tmp_path / "src.db"
    _source(src)
    small = tmp_path / "small"
    cmd = shlex.join([_exe(), "--db", str(src), "backup", str(small / "copy.db")])
    done = _in_small_fs(small, "400k", f"{cmd}; echo rc=$?; ls -a {shlex.quote(str(small))}")
    out = done.stdout.splitlines()
    assert "rc=1" in out, (done.stdout, done.stderr)
    assert "disk is full" in done.stderr
    _check_backup_failure(done.stderr)
    assert [name for name in out[out.index("rc=1") + 1 :] if name not in (".", "..")] == []
    assert integrity(src) == ["ok"]


def test_backup_past_a_file_size_limit_leaves_nothing(tmp_path: Path) -> None:
    """`backup` under RLIMIT_FSIZE: exit 1, a clear error and hint, and no DEST-journal left."""
    src = tmp_path / "src.db"
    _source(src)
    dest = tmp_path / "out" / "copy.db"
    dest.parent.mkdir()

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, resource.RLIM_INFINITY))

    done = subprocess.run(
        [_exe(), "--db", str(src), "backup", str(dest)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=limit,
    )
    assert done.returncode == 1, done.stderr
    _check_backup_failure(done.stderr)
    assert os.listdir(dest.parent) == []
    assert integrity(src) == ["ok"]


FILL = """
import sys
from freezegun import freeze_time
from sqlstore import Event, Session, SQLiteStore
from sqlstore.errors import StoreFull
store = SQLiteStore(sys.argv[1])
n = 0
try:
    with freeze_time("2025-01-01"):
        while True:
            store.sessions.save(Session.new(f"s{n}"))
            for i in range(20):
                store.events.append_event(f"s{n}", Event("m", text="y" * 500))
            n += 1
except StoreFull:
    pass
try:
    with open(sys.argv[1] + ".pad", "wb") as pad:
        while True:
            pad.write(b"z" * 4096)
except OSError:
    pass
store.close()
print("filled", n)
"""


def test_prune_on_a_full_file_system_says_how_to_get_going(tmp_path: Path) -> None:
    """`prune` on a full disk fails with a hint that frees space first, never "run prune"."""
    small = tmp_path / "small"
    db = small / "full.db"
    fill = tmp_path / "fill.py"
    fill.write_text(FILL, encoding="utf-8")
    flags = ["--older-than", "1d", "--kind", "main", "--acknowledge-main-deletion", "--yes"]
    prune = shlex.join([_exe(), "--db", str(db), "prune", *flags])
    check = shlex.join([_exe(), "--db", str(db), "--json", "check"])
    pad = shlex.quote(str(db) + ".pad")
    script = (
        f"{shlex.join([sys.executable, str(fill), str(db)])} && {prune}; echo rc=$?; "
        f"rm {pad}; {check}"
    )
    done = _in_small_fs(small, "3m", script)
    assert "rc=1" in done.stdout, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Error: ") and "disk is full" in lines[0], done.stderr
    hint = next(line for line in lines if line.startswith("Hint: "))
    assert "`sqlstore prune`" not in hint and "free" in hint.lower()
    assert json.loads(done.stdout.split("rc=1", 1)[1])["ok"] is True
