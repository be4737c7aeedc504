"""Source file names that are not valid UTF-8 (issue 20, item 10).

Such an item used to crash ``migrate`` into SQLite with a traceback (its name
cannot be stored) and roll back its whole batch on every re-run. It is now
reported failed, by an escaped name, and the rest is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sqlstore import SQLiteStore
from sqlstore.migrate import run_migration

REPO = Path(__file__).resolve().parents[1]
SQLSTORE = Path(sys.executable).with_name("sqlstore")
EXAMPLE = REPO / "examples" / "runlogs" / "20261128-090000.jsonl"


def _source(root: bytes) -> None:
    os.makedirs(root)
    for stem in (b"good-1", b"bad\xff", b"good-2", b"also\xfe\xfdbad"):
        with open(root + b"/" + stem + b".jsonl", "wb") as handle:
            handle.write(EXAMPLE.read_bytes().replace(b"20261128-090000", b"x"))
    with open(root + b"/notes\xff.txt", "wb") as handle:
        handle.write(b"not a run log")


def test_non_utf8_item_names_fail_alone_through_the_script(tmp_path: Path) -> None:
    """Through the script: bad names are failed with an escaped name; good ones import; twice."""
    source = os.fsencode(tmp_path) + b"/runs"
    _source(source)
    db = tmp_path / "s.db"
    for _ in range(2):
        done = subprocess.run(
            [os.fsencode(SQLSTORE), b"--db", os.fsencode(db), b"migrate", source, b"--json"],
            capture_output=True,
            timeout=120,
        )
        assert done.returncode == 1, done.stderr
        assert b"Traceback" not in done.stderr
        report = json.loads(done.stdout)
        failed = {i["item"]: i["detail"] for i in report["items"] if i["outcome"] == "failed"}
        assert set(failed) == {"bad\\xff.jsonl", "also\\xfe\\xfdbad.jsonl"}
        assert all("not valid UTF-8" in why for why in failed.values())
    with SQLiteStore(db, readonly=True) as store:
        assert sorted(s.id for s in store.sessions.list()) == ["good-1", "good-2"]
    human = subprocess.run(
        [os.fsencode(SQLSTORE), b"--db", os.fsencode(db), b"migrate", source],
        capture_output=True,
        timeout=120,
    )
    assert b"failed: bad\\xff.jsonl: the file name is not valid UTF-8" in human.stdout


def test_a_non_utf8_source_directory_and_mecatl_family(tmp_path: Path) -> None:
    """A source directory and a sid-v2 family whose names are not UTF-8 import into SQLite."""
    root = os.fsencode(tmp_path) + b"/store\xff"
    shutil.copytree(REPO / "examples" / "mecatl-store", os.fsdecode(root), symlinks=True)
    v2 = root + b"/sid-v2"
    snap = next(n for n in os.listdir(v2) if b"review-" in n and n.endswith(b".session.json"))
    with open(v2 + b"/" + snap, "rb") as handle:
        envelope = json.loads(handle.read())
    envelope["snapshot"]["id"] = "copied"
    with open(v2 + b"/sid-v2-\xffcopied-00000000000000000000000000000000.session.json", "wb") as f:
        f.write(json.dumps(envelope).encode())
    with SQLiteStore(tmp_path / "s.db") as store:
        report = run_migration(store, os.fsdecode(root))
        assert "\\xff" in report.source
        failed = [i.item for i in report.items if i.outcome == "failed"]
        assert failed == ["sid-v2/sid-v2-\\xffcopied-00000000000000000000000000000000"]
        assert report.imported >= 2
        assert "copied" not in {s.id for s in store.sessions.list()}
        again = run_migration(store, os.fsdecode(root))
        assert again.imported == 0 and again.failed == 1
