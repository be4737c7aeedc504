"""A directory of openzot run logs as a migration source.

Each ``<id>.jsonl`` file is one item (with the files of its ``<id>.blobs/``
folder, which are part of its fingerprint); the session id is the file stem.
Anything else in the directory is skipped with a reason.
"""

from __future__ import annotations

from pathlib import Path

from sqlstore import runlog
from sqlstore.migrate.items import ItemBytes, SessionImport, SourceItem
from sqlstore.migrate.runlog_mapping import session_from_runlog

BLOB_DIR_SUFFIX = runlog.BLOBS_SUFFIX


def scan_runlogs(root: Path) -> tuple[list[SourceItem], list[tuple[str, str]]]:
    """Return the run-log items of ``root`` (sorted by name) and the skipped entries.

    A skipped entry is ``(name, reason)``; ``.blobs`` folders that belong to a run
    log are part of that item, not skipped.
    """
    items: list[SourceItem] = []
    skipped: list[tuple[str, str]] = []
    stems = {p.name[: -len(runlog.RUNLOG_SUFFIX)] for p in root.glob(f"*{runlog.RUNLOG_SUFFIX}")}
    for path in sorted(root.iterdir()):
        name = path.name
        if name.endswith(runlog.RUNLOG_SUFFIX) and path.is_file() and not path.is_symlink():
            blobs = root / (name[: -len(runlog.RUNLOG_SUFFIX)] + BLOB_DIR_SUFFIX)
            files = [path]
            if blobs.is_dir():
                files.extend(sorted(p for p in blobs.iterdir() if p.is_file()))
            items.append(SourceItem(name, tuple(files)))
        elif name.endswith(BLOB_DIR_SUFFIX) and name[: -len(BLOB_DIR_SUFFIX)] in stems:
            continue
        elif path.is_symlink():
            skipped.append((name, "a symbolic link (not followed)"))
        elif path.is_dir():
            skipped.append((name + "/", "a directory, not a run log"))
        else:
            skipped.append((name, "not a run log (no .jsonl suffix)"))
    return items, skipped


def import_runlog(data: ItemBytes) -> SessionImport:
    """Map the bytes of one run-log item to a session import.

    Raises:
        ItemSkipped: the file is not a run log.
        InvalidSessionId: the file stem is not a valid session id.
    """
    main = data.item.files[0]
    stem = main.name[: -len(runlog.RUNLOG_SUFFIX)]
    log = runlog.decode(data.contents.get(main, b""), run_id=stem, path=str(main))
    blobs = {path.name: body for path, body in data.contents.items() if path != main}
    mtime_ns = data.mtimes_ns.get(main, 0)
    return session_from_runlog(log, blobs, mtime_ns, str(main))
