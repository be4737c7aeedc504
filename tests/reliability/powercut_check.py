"""Check power-cut images in a fresh process: ``python powercut_check.py JOBS OUT``.

JOBS is a JSON list of ``{"key", "dir", "db", "resume"}``. For each image the
database is opened with the normal (unix) VFS — SQLite recovers its WAL as after
a reboot — and checked: ``PRAGMA integrity_check``, the logical state
(:func:`tests.reliability.powercut_state.dump`), then ``SQLiteStore`` must open
it (and, with ``resume``, ``run_migration`` is run again on it and the content
dumped). OUT receives one JSON object per image. Many images are checked per
process (one process per batch, not per image) to keep the battery fast.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import apsw

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from powercut_state import EMPTY, dump


def check(job: dict[str, Any]) -> dict[str, Any]:
    """Check one image; never raises (errors are part of the result)."""
    db = os.path.join(job["dir"], job["db"])
    out: dict[str, Any] = {"key": job["key"]}
    if not os.path.exists(db):
        out.update(integrity="ok", digest=EMPTY, sessions={})
    else:
        try:
            conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READWRITE, vfs="unix")
            try:
                rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
                out["integrity"] = "ok" if rows == ["ok"] else "; ".join(rows[:5])
                out.update(dump(conn))
            finally:
                conn.close()
        except apsw.Error as exc:
            out.update(integrity=f"{type(exc).__name__}: {exc}", digest=None, sessions={})
            return out
    from sqlstore import SQLiteStore

    try:
        with SQLiteStore(db) as store:
            if job.get("resume"):
                from sqlstore.migrate import run_migration

                report = run_migration(store, job["resume"]["source"], batch_sessions=3)
                out["resumed"] = {"imported": report.imported, "failed": report.failed}
                out["content"] = store.db.read(lambda c: dump(c, content_only=True))["digest"]
    except Exception as exc:
        out["open_error"] = f"{type(exc).__name__}: {exc}"
    return out


def main(jobs_path: str, out_path: str) -> None:
    """Check every job of ``jobs_path``; write the results to ``out_path``."""
    with open(jobs_path, encoding="utf-8") as handle:
        jobs = json.load(handle)
    results = [check(job) for job in jobs]
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
