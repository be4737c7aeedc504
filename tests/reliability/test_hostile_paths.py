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

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstore import SQLiteStore
from sqlstore.migrate import export_sessions

from .helpers import save_hostile_blobs

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
