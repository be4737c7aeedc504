"""``sqlstore migrate`` never follows a symbolic link out of its source (issue 20, item 2).

A link at any level of a run-log or mecatl source is reported as skipped with a
reason and its target is never read; a blob is imported only when its content is
the sha256 its name says.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sqlstore import SQLiteStore
from sqlstore.migrate import run_migration
from sqlstore.migrate.items import SourceItem, read_item

REPO = Path(__file__).resolve().parents[1]
SQLSTORE = Path(sys.executable).with_name("sqlstore")
SECRET = b"TOP-SECRET-HOST-FILE-7731"
PNG = b"\x89PNG-real-image"


def _secret(tmp_path: Path) -> Path:
    path = tmp_path / "host-secret"
    path.write_bytes(SECRET)
    return path


def _stored_bytes(db: Path) -> bytes:
    return b"".join(
        Path(f"{db}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if Path(f"{db}{suffix}").exists()
    )


def _run_log(source: Path, stem: str, digests: list[str]) -> None:
    images = [{"digest": d, "media_type": "image/png", "width": 1, "height": 1} for d in digests]
    lines = [
        {"kind": "meta", "at": "2026-11-29T10:00:00Z", "meta": {"id": stem, "task": "t"}},
        {
            "kind": "message",
            "at": "2026-11-29T10:00:01Z",
            "message": {"type": "attachment", "text": "see", "images": images},
        },
        {"kind": "result", "at": "2026-11-29T10:00:02Z", "result": {"code": 0}},
    ]
    (source / f"{stem}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _migrate(db: Path, source: Path) -> dict[str, object]:
    done = subprocess.run(
        [SQLSTORE, "--db", db, "migrate", source, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def _outcomes(report: dict[str, object]) -> dict[str, tuple[str, str]]:
    items = report["items"]
    assert isinstance(items, list)
    return {i["item"]: (i["outcome"], i.get("detail", "")) for i in items}


def test_a_linked_blob_is_skipped_and_never_read(tmp_path: Path) -> None:
    """Through the console script: ``NAME.blobs/<digest>.png`` linking to a host file is skipped."""
    secret = _secret(tmp_path)
    digest = hashlib.sha256(SECRET).hexdigest()
    source = tmp_path / "src"
    (source / "run.blobs").mkdir(parents=True)
    (source / "run.blobs" / f"{digest}.png").symlink_to(secret)
    _run_log(source, "run", [digest])
    db = tmp_path / "s.db"
    report = _migrate(db, source)
    assert report["imported"] == 1
    outcome, detail = _outcomes(report)[f"run.blobs/{digest}.png"]
    assert outcome == "not_a_session" and "symbolic link" in detail
    with SQLiteStore(db, readonly=True) as store:
        assert [p.data for p in store.sessions.load("run").messages[0].parts] == [b""]
    assert SECRET not in _stored_bytes(db)


def test_a_linked_blob_folder_is_skipped(tmp_path: Path) -> None:
    """A ``NAME.blobs`` that is a symlink to a directory elsewhere is not read."""
    digest = hashlib.sha256(SECRET).hexdigest()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{digest}.png").write_bytes(SECRET)
    source = tmp_path / "src"
    source.mkdir()
    (source / "run.blobs").symlink_to(elsewhere)
    _run_log(source, "run", [digest])
    with SQLiteStore(tmp_path / "s.db") as store:
        report = run_migration(store, source)
        assert report.imported == 1
        skipped = {i.item: i.detail for i in report.items if i.outcome == "not_a_session"}
        assert "symbolic link" in skipped["run.blobs"]
        assert [p.data for p in store.sessions.load("run").messages[0].parts] == [b""]
    assert SECRET not in _stored_bytes(tmp_path / "s.db")


def test_a_blob_whose_content_is_not_its_digest_is_not_imported(tmp_path: Path) -> None:
    """A blob named with one digest but holding other bytes is left out, with a warning."""
    source = tmp_path / "src"
    (source / "run.blobs").mkdir(parents=True)
    good = hashlib.sha256(PNG).hexdigest()
    claimed = hashlib.sha256(b"something else").hexdigest()
    (source / "run.blobs" / f"{good}.png").write_bytes(PNG)
    (source / "run.blobs" / f"{claimed}.png").write_bytes(SECRET)
    _run_log(source, "run", [good, claimed])
    with SQLiteStore(tmp_path / "s.db") as store:
        report = run_migration(store, source)
        parts = store.sessions.load("run").messages[0].parts
    assert [p.data for p in parts] == [PNG, b""]
    assert any("does not match the sha256" in w and claimed in w for w in report.warnings)


def test_linked_mecatl_files_and_folders_are_skipped(tmp_path: Path) -> None:
    """A linked ``sid-v2/*.session.json`` and a linked ``sid-v1`` are skipped, not read."""
    source = tmp_path / "mecatl"
    shutil.copytree(REPO / "examples" / "mecatl-store", source, symlinks=True)
    outside = tmp_path / "outside"
    shutil.copytree(source / "sid-v1", outside)
    shutil.rmtree(source / "sid-v1")
    (source / "sid-v1").symlink_to(outside)
    real = next((source / "sid-v2").glob("*review-*.session.json"))
    foreign = tmp_path / "foreign.session.json"
    envelope = json.loads(real.read_text())
    envelope["snapshot"]["id"] = "stolen-" + SECRET.decode()
    foreign.write_text(json.dumps(envelope))
    link = source / "sid-v2" / "sid-v2-stolen-00000000000000000000000000000000.session.json"
    link.symlink_to(foreign)
    db = tmp_path / "s.db"
    report = _migrate(db, source)
    outcomes = _outcomes(report)
    assert outcomes[f"sid-v2/{link.name}"][0] == "not_a_session"
    assert "symbolic link" in outcomes[f"sid-v2/{link.name}"][1]
    assert "symbolic link" in outcomes["sid-v1"][1]
    assert not any(name.startswith("sid-v1/") for name in outcomes)
    assert SECRET not in _stored_bytes(db)


def test_a_file_replaced_by_a_link_after_the_scan_is_not_read(tmp_path: Path) -> None:
    """Reading an item refuses a file that became a symlink after scanning (no race window)."""
    secret = _secret(tmp_path)
    path = tmp_path / "run.jsonl"
    path.symlink_to(secret)
    with pytest.raises(OSError):
        read_item(SourceItem("run.jsonl", (path,)))
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        read_item(SourceItem("fifo.jsonl", (fifo,)))  # never blocks on a FIFO
