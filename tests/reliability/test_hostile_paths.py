"""Hostile names and paths, as classes of input (issue 20: items 1, 2, 9, 10, 13).

* Names an export writes: any text as a stored blob name or session id writes
  only single, derived components under ``--out`` (both formats).
* Links in migrate sources: a symlink at any level of a run-log or mecatl source
  (the item file, the ``.blobs`` folder, a blob, ``sid-v2``/``sid-v1``, a family
  file) is skipped with a reason and never read; a blob whose content is not its
  sha256 name is not imported.
* Relative paths everywhere a path is taken (``--db``, ``--out``, SOURCE, ``--to``,
  ``--from``, ``backup DEST``, ``--config``) work like the absolute ones.
* File names that are not UTF-8 (source items, the source directory, ``--db``,
  ``--out``) give a reported failure or a clear ``Error:``, never a traceback.
* OS errors on paths (missing directories, names over 255 bytes, FIFOs, empty
  paths) give ``Error:`` plus ``Hint:`` and exit 1, never a hang or a traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstore import Event, Session, SQLiteStore
from sqlstore.migrate import export_sessions, run_migration

from .helpers import REPO, save_hostile_blobs

SQLSTORE = Path(sys.executable).with_name("sqlstore")
NAMES = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@NAMES
@given(names=st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_any_stored_blob_name_exports_inside_out(names: list[str]) -> None:
    """Whatever text a session stores as blob names, export writes only digest names under --out."""
    base = Path(tempfile.mkdtemp(prefix="blobnames-"))
    try:
        db = base / "s.db"
        save_hostile_blobs(db, names)
        out = base / "deep" / "out"
        with SQLiteStore(db, readonly=True) as store:
            report = export_sessions(store, "runlog", out)
        assert report.exported == ["evil"], report.failed
        for path in base.rglob("*"):
            rel = str(path.relative_to(base))
            assert rel in ("deep",) or rel.startswith(("deep/out", "s.db")), rel
        folder = out / "evil.blobs"  # absent when every name is empty (a missing blob)
        for blob in folder.iterdir() if folder.exists() else ():
            stem, _, ext = blob.name.partition(".")
            assert len(stem) == 64 and ext.isalnum() and ext.isascii(), blob.name
    finally:
        shutil.rmtree(base)


SECRET = b"HOST-SECRET-5521"
LINK_LEVELS = [
    "runlog:item",
    "runlog:blob-folder",
    "runlog:blob",
    "mecatl:sid-v2",
    "mecatl:sid-v1",
    "mecatl:snapshot",
    "mecatl:events",
    "mecatl:tools",
    "mecatl:v1-file",
    "mecatl:root-entry",
]


def _link_source(base: Path, level: str) -> tuple[Path, str]:
    """Build a source with a symlink to a host secret at ``level``; return it and the link."""
    secret_dir = base / "host"
    secret_dir.mkdir()
    digest = hashlib.sha256(SECRET).hexdigest()
    (secret_dir / f"{digest}.png").write_bytes(SECRET)
    source = base / "src"
    fmt, where = level.split(":")
    if fmt == "runlog":
        source.mkdir()
        good = (REPO / "examples" / "runlogs" / "20261128-090000.jsonl").read_text()
        (source / "good.jsonl").write_text(good.replace("20261128-090000", "good"))
        secret_log = secret_dir / "stolen.jsonl"
        secret_log.write_text(good.replace("20261128-090000", SECRET.decode()))
        if where == "item":
            return source, _link(source / "stolen.jsonl", secret_log)
        if where == "blob-folder":
            return source, _link(source / "good.blobs", secret_dir)
        (source / "good.blobs").mkdir()
        return source, _link(source / "good.blobs" / f"{digest}.png", secret_dir / f"{digest}.png")
    shutil.copytree(REPO / "examples" / "mecatl-store", source, symlinks=True)
    v2 = source / "sid-v2"
    family = next(v2.glob("*review-*.session.json")).name[: -len(".session.json")]
    stolen = secret_dir / "stolen.session.json"
    envelope = json.loads((v2 / f"{family}.session.json").read_text())
    envelope["snapshot"]["id"] = SECRET.decode()
    stolen.write_text(json.dumps(envelope))
    lines = secret_dir / "stolen.jsonl"
    lines.write_text(json.dumps({"v": "eventlog-gen/1", "g": SECRET.decode()}) + "\n")
    if where in ("sid-v2", "sid-v1"):
        moved = secret_dir / where
        shutil.move(source / where, moved)
        return source, _link(source / where, moved)
    if where == "snapshot":
        return source, _link(v2 / "sid-v2-x-00000000000000000000000000000000.session.json", stolen)
    if where in ("events", "tools"):
        target = v2 / f"{family}.{where}.jsonl"
        target.unlink(missing_ok=True)
        return source, _link(target, lines)
    if where == "v1-file":
        return source, _link(source / "sid-v1" / "sid-v1-x.session.jsonl", stolen)
    return source, _link(source / "extra", secret_dir)


def _link(path: Path, target: Path) -> str:
    path.symlink_to(target)
    return path.name


@pytest.mark.parametrize("level", LINK_LEVELS)
def test_links_at_every_level_of_a_source_are_skipped(tmp_path: Path, level: str) -> None:
    """A symlink anywhere in a source is reported skipped, with a reason; its target is unread."""
    source, link = _link_source(tmp_path, level)
    db = tmp_path / "s.db"
    with SQLiteStore(db) as store:
        report = run_migration(store, source)
        ids = [s.id for s in store.sessions.list()]
    assert report.imported >= 1 and SECRET.decode() not in ids
    linked = [i for i in report.items if i.item.rstrip("/").endswith(link)]
    assert linked and all("symbolic link" in i.detail for i in linked), report.items
    assert report.failed == 0, report.items
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("s.db*") if p.is_file())
    assert SECRET not in stored


DAMAGE = {
    "bogus-state": ("snapshots", lambda body: body.replace(b'"state":"idle"', b'"state":"bogus"')),
    "not-json": ("snapshots", lambda body: b"{not json"),
    "not-utf8": ("snapshots", lambda body: b"\xff\xfe" + body),
    "wrong-version": ("snapshots", lambda body: body.replace(b"sqlstore-session/1", b"x/9")),
    "event-garbage": ("events", lambda body: b"\xff{"),
}
BULK = {
    "export-runlog": ["export", "--format", "runlog", "--out", "out", "--all"],
    "export-mecatl": ["export", "--format", "mecatl", "--out", "out", "--all"],
    "copy": ["migrate", "--to", "other.db"],
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", sorted(BULK))
def test_one_damaged_row_fails_only_its_session(tmp_path: Path, damage: str, command: str) -> None:
    """A bulk command over a store with one undecodable session handles all the others."""
    db = tmp_path / "s.db"
    ids = ["a", "b", "c", "d"]
    with SQLiteStore(db) as store:
        for sid in ids:
            store.sessions.save(Session.new(sid))
            store.events.append_event(sid, Event("message", text=sid))
    table, change = DAMAGE[damage]
    key = "id" if table == "snapshots" else "session_id"
    conn = apsw.Connection(str(db))
    (body,) = conn.execute(f"SELECT body FROM {table} WHERE {key} = 'c'").fetchone()
    conn.execute(f"UPDATE {table} SET body = ? WHERE {key} = 'c'", (change(bytes(body)),))
    conn.close()
    done = subprocess.run(
        [SQLSTORE, "--db", "s.db", *BULK[command], "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    if damage == "event-garbage" and command != "copy":
        # A damaged stored record is file damage (StoreCorrupt): export stops with
        # Error + Hint and removes what it wrote (test_cli_bad_files); copy goes on.
        assert done.stderr.startswith("Error: ") and "Hint: " in done.stderr
        assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json*"))
        return
    if command == "copy":
        with SQLiteStore(tmp_path / "other.db", readonly=True) as store:
            assert sorted(s.id for s in store.sessions.list()) == ["a", "b", "d"]
    else:
        with SQLiteStore(tmp_path / "back.db") as back:
            run_migration(back, tmp_path / "out")
            assert sorted(s.id for s in back.sessions.list()) == ["a", "b", "d"]


RELATIVE = [
    ["--db", "rel.db", "init"],
    ["--db", "sub/dir/new.db", "init"],
    ["--db", "./rel.db", "ls"],
    ["--db", "rel.db", "stats"],
    ["--db", "rel.db", "check"],
    ["--db", "rel.db", "export", "--format", "runlog", "--out", "out", "--all"],
    ["--db", "rel.db", "export", "--format", "mecatl", "--out", "./m/out", "--all"],
    ["--db", "rel.db", "migrate", "runs"],
    ["--db", "rel.db", "migrate", "./runs", "--to", "to.db"],
    ["--db", "rel.db", "migrate", "--to", "copy.db"],
    ["--db", "rel.db", "migrate", "--to", "sqlite:///copy2.db"],
    ["migrate", "--from", "rel.db", "--to", "back/copy3.db"],
    ["--db", "rel.db", "backup", "bk.db"],
    ["--db", "rel.db", "backup", "bk/dir/bk.db"],
    ["--db", "rel.db", "retention", "plan", "--config", "policy.toml"],
    ["--db", "rel.db", "prune", "--older-than", "1d", "--dry-run"],
]


@pytest.mark.parametrize("args", RELATIVE, ids=lambda a: "-".join(a)[:60])
def test_relative_paths_work_everywhere(tmp_path: Path, args: list[str]) -> None:
    """Every path option given relative to the cwd works like the absolute one, never hangs."""
    with SQLiteStore(tmp_path / "rel.db") as store:
        store.sessions.save(Session.new("one"))
    shutil.copytree(REPO / "examples" / "runlogs", tmp_path / "runs")
    (tmp_path / "policy.toml").write_text('[retention]\nsweep_every = "1h"\n')
    done = subprocess.run(
        [SQLSTORE, *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


RAW_NAMES = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b"..")
)


@NAMES
@given(names=st.lists(RAW_NAMES, max_size=5, unique=True), suffix=st.booleans())
def test_any_byte_file_names_in_a_source_import_or_are_reported(
    names: list[bytes], suffix: bool
) -> None:
    """Whatever bytes the file names hold, migrate into SQLite imports the good log, no raise."""
    base = Path(tempfile.mkdtemp(prefix="bytenames-"))
    try:
        source = os.fsencode(base) + b"/src"
        os.mkdir(source)
        body = (REPO / "examples" / "runlogs" / "20261128-090000.jsonl").read_bytes()
        with open(source + b"/good.jsonl", "wb") as handle:
            handle.write(body)
        for name in names:
            full = source + b"/" + name + (b".jsonl" if suffix else b"")
            if not os.path.lexists(full):
                with open(full, "wb") as handle:
                    handle.write(body)
        with SQLiteStore(base / "s.db") as store:
            report = run_migration(store, os.fsdecode(source))
            ids = {s.id for s in store.sessions.list()}
        assert "good" in ids
        for item in report.items:
            item.item.encode("utf-8")  # every reported name is printable text
        again_json = json.dumps(report.to_json(), ensure_ascii=False).encode("utf-8")
        assert again_json
    finally:
        shutil.rmtree(base)


BAD_PATHS = {
    "too-long": "n" * 300 + ".db",
    "too-long-dir": "n" * 300 + "/x.db",
    "through-a-file": "file.txt/x.db",
    "fifo": "fifo.db",
    "not-utf8": b"bad\xff.db",
    "dangling-link": "dangling.db",
    "directory": "adir",
    "empty": "",
}
PATH_TAKERS = {
    "db-ls": lambda p: ["--db", p, "ls"],
    "db-init": lambda p: ["--db", p, "init"],
    "db-check": lambda p: ["--db", p, "check"],
    "backup": lambda p: ["--db", "s.db", "backup", p],
    "export-out": lambda p: ["--db", "s.db", "export", "--format", "mecatl", "--all", "--out", p],
    "migrate-to": lambda p: ["--db", "s.db", "migrate", "--to", p],
}


@pytest.mark.parametrize("taker", sorted(PATH_TAKERS))
@pytest.mark.parametrize("bad", sorted(BAD_PATHS))
def test_bad_paths_give_clear_errors_everywhere(tmp_path: Path, bad: str, taker: str) -> None:
    """Every path option, given a path the OS refuses, exits 1 (2 if empty) with Error, no hang."""
    with SQLiteStore(tmp_path / "s.db") as store:
        store.sessions.save(Session.new("one"))
    (tmp_path / "file.txt").write_text("x")
    os.mkfifo(tmp_path / "fifo.db")
    (tmp_path / "dangling.db").symlink_to(tmp_path / "nowhere")
    (tmp_path / "adir").mkdir()
    before = sorted(os.listdir(tmp_path))
    args = [os.fsencode(a) for a in PATH_TAKERS[taker](BAD_PATHS[bad])]
    done = subprocess.run(
        [os.fsencode(SQLSTORE), *args], cwd=tmp_path, capture_output=True, timeout=30
    )
    assert b"Traceback" not in done.stderr, done.stderr
    if (bad, taker) in (("directory", "export-out"), ("not-utf8", "export-out")):
        assert done.returncode == 0  # an existing directory, or any name the OS takes
        return
    assert done.returncode == (2 if bad == "empty" else 1), (done.stdout, done.stderr)
    assert b"Error: " in done.stderr
    after = [n for n in sorted(os.listdir(tmp_path)) if n not in before]
    assert [n for n in after if not n.startswith("s.db-")] == [], after  # -wal/-shm of a read
