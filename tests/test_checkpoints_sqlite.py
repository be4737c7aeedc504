"""SQLite specifics of the checkpoint tables: the 2 -> 3 schema upgrade, backup, check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
from click.testing import CliRunner

from cli.main import cli
from sqlstore import Session, SQLiteStore
from sqlstore.checkpoints import CheckpointRecord
from sqlstore.errors import StoreClosed
from sqlstore.sqlite.connection import SCHEMA_VERSION


def record(thread: str, n: int) -> CheckpointRecord:
    """Return a small checkpoint record."""
    return CheckpointRecord(thread, "", f"cp-{n:04d}", None, "json", b"{}", b'{"step": 1}', {})


def test_schema_2_file_is_upgraded_to_3(tmp_path: Path) -> None:
    """A version-2 file (no checkpoint tables) gets them on open and keeps every session."""
    path = tmp_path / "v2.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("old", title="kept"))
    conn = apsw.Connection(str(path))
    # Everything schema 3 added (every feature's block), so the file is a real version 2.
    conn.execute(
        "BEGIN IMMEDIATE; DROP TABLE checkpoints; DROP TABLE checkpoint_blobs; "
        "DROP TABLE checkpoint_writes; DROP TABLE IF EXISTS scoped_state; "
        "DROP INDEX IF EXISTS sessions_by_state_kind; DROP INDEX IF EXISTS sessions_by_parent; "
        "PRAGMA user_version = 2; COMMIT"
    )
    conn.close()
    with SQLiteStore(path) as store:
        assert store.sessions.load("old").title == "kept"
        store.checkpoints.put(record("old", 1), [])
        assert store.checkpoints.get("old", "") is not None
    conn = apsw.Connection(str(path))
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (3,)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_backup_and_check_cover_checkpoints(tmp_path: Path) -> None:
    """``sqlstore backup`` copies the checkpoint tables; ``check`` counts them."""
    db, copy = tmp_path / "s.db", tmp_path / "copy.db"
    with SQLiteStore(db) as store:
        store.checkpoints.put(record("t", 1), [], session=Session.new("t"))
        store.checkpoints.put(record("t", 2), [])
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", str(db), "backup", str(copy)]).exit_code == 0
    with SQLiteStore(copy) as store:
        assert store.checkpoints.summary("t").checkpoints == 2
    checked = runner.invoke(cli, ["--db", str(copy), "--json", "check"])
    assert checked.exit_code == 0, checked.output
    assert '"checkpoints": 2' in checked.output


def test_put_many_rolls_back_only_the_item_that_fails_in_sql(tmp_path: Path) -> None:
    """When one function of write_each fails inside the transaction, only it is lost."""
    with SQLiteStore(tmp_path / "s.db") as store:
        db = store.db

        def insert(n: int) -> Any:
            def op(conn: apsw.Connection) -> int:
                conn.execute("INSERT INTO store_meta (key, value) VALUES (?, ?)", (f"k{n}", n))
                if n == 2:
                    raise ValueError("item two is refused")
                return n

            return op

        def keys() -> list[str]:
            with db.reader() as conn:
                found = conn.execute("SELECT key FROM store_meta WHERE key LIKE 'k%' ORDER BY 1")
                return [str(k) for (k,) in found]

        outcomes = db.write_each([insert(n) for n in range(4)])
        assert [r for r, _ in outcomes] == [0, 1, None, 3]
        assert isinstance(outcomes[2][1], ValueError)
        assert keys() == ["k0", "k1", "k3"]
        # A failing ``together`` (the work of all at once) falls back to one write each.
        ops = [insert(n) for n in range(10, 13)]
        together = db.write_each(ops, together=lambda conn: [op(conn) for op in ops])
        assert [r for r, _ in together] == [10, 11, 12]
        failing = [insert(20), insert(2)]
        outcomes = db.write_each(failing, together=lambda conn: [op(conn) for op in failing])
        assert [type(e) if e else None for _, e in outcomes] == [None, ValueError]
        assert keys() == ["k0", "k1", "k10", "k11", "k12", "k20", "k3"]
        store.close()
        assert [type(e) for _, e in db.write_each([insert(5)])] == [StoreClosed]


def test_file_with_the_earlier_checkpoint_table_shapes_works(tmp_path: Path) -> None:
    """A schema-3 file with main's table shapes (WITHOUT ROWID, blobs by channel) works alike."""
    from sqlstore.checkpoints import JSON_TYPE, ChannelBlob, CheckpointQuery

    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    conn = apsw.Connection(str(path))
    conn.execute(
        "DROP TABLE checkpoint_blobs; CREATE TABLE checkpoint_blobs (session_id TEXT NOT NULL, "
        "ns TEXT NOT NULL, channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT NOT NULL, "
        "data BLOB NOT NULL, PRIMARY KEY (session_id, ns, channel, version)) WITHOUT ROWID; "
        "DROP TABLE checkpoints; CREATE TABLE checkpoints (session_id TEXT NOT NULL, "
        "ns TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT, run_id TEXT, "
        "type TEXT NOT NULL, body BLOB NOT NULL, metadata BLOB NOT NULL, versions TEXT NOT NULL, "
        "PRIMARY KEY (session_id, ns, checkpoint_id)) WITHOUT ROWID"
    )
    conn.close()
    with SQLiteStore(path) as store:
        cp = store.checkpoints
        for n in range(1, 4):
            rec = CheckpointRecord(
                "t", "", f"cp-{n:04d}", None, JSON_TYPE, b"{}", b"{}", {"a": str(n)}
            )
            cp.put(
                rec,
                [ChannelBlob("a", str(n), JSON_TYPE, f'"v{n}"'.encode())],
                session=Session.new("t"),
            )
        page = cp.page(CheckpointQuery(thread_id="t"), limit=10)
        assert [e.blobs["a"].data for e in page.entries] == [b'"v3"', b'"v2"', b'"v1"']
        docs = cp.documents(CheckpointQuery(thread_id="t"), limit=2)
        assert [d.text for d in docs.documents] == [
            '[{},{"a":"v3"},{},[]]',
            '[{},{"a":"v2"},{},[]]',
        ]
        assert cp.copy_thread("t", "u", session=Session.new("u")) == 3
        assert cp.prune(["t"]) == 2
        assert cp.summary("t").blobs == 1 and cp.summary("u").blobs == 3
        store.sessions.delete("u")
        assert cp.summary("u") == cp.summary("nobody")
