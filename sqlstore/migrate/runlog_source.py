"""A directory of openzot run logs as a migration source.

Each ``<id>.jsonl`` file is one item (with the files of its ``<id>.blobs/``
folder, which are part of its fingerprint); the session id is the file stem.
Anything else in the directory is skipped with a reason.

Symbolic links are never followed, at any level: a linked run log, a linked
``.blobs`` folder and a linked blob are skipped with a reason (a link could
point at any file of the host). A blob is used only when its name is the sha256
of its content (``<sha256-hex>.<ext>``); any other blob is left out with a
warning and its image part is empty, as for a missing blob.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlstore import runlog
from sqlstore.jsonl import LineProblem
from sqlstore.migrate.items import ItemBytes, SessionImport, SourceItem
from sqlstore.migrate.runlog_mapping import session_from_runlog

BLOB_DIR_SUFFIX = runlog.BLOBS_SUFFIX
SKIP_LINK = "a symbolic link (not followed)"


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
        if path.is_symlink():
            skipped.append((name, SKIP_LINK))
        elif name.endswith(runlog.RUNLOG_SUFFIX) and path.is_file():
            blobs = root / (name[: -len(runlog.RUNLOG_SUFFIX)] + BLOB_DIR_SUFFIX)
            files = [path]
            if blobs.is_dir() and not blobs.is_symlink():
                files.extend(_blob_files(blobs, skipped))
            items.append(SourceItem(name, tuple(files)))
        elif name.endswith(BLOB_DIR_SUFFIX) and name[: -len(BLOB_DIR_SUFFIX)] in stems:
            continue
        elif path.is_dir():
            skipped.append((name + "/", "a directory, not a run log"))
        else:
            skipped.append((name, "not a run log (no .jsonl suffix)"))
    return items, skipped


def _blob_files(folder: Path, skipped: list[tuple[str, str]]) -> list[Path]:
    """Return the regular files of a ``.blobs`` folder; links and others are skipped."""
    files: list[Path] = []
    for path in sorted(folder.iterdir()):
        where = f"{folder.name}/{path.name}"
        if path.is_symlink():
            skipped.append((where, SKIP_LINK))
        elif path.is_file():
            files.append(path)
        else:
            skipped.append((where, "not a blob file"))
    return files


def _checked_blobs(data: ItemBytes, main: Path, warnings: list[LineProblem]) -> dict[str, bytes]:
    """Return the blobs whose name is the sha256 of their content; warn about the others."""
    blobs: dict[str, bytes] = {}
    for path, body in data.contents.items():
        if path == main:
            continue
        if path.name.split(".", 1)[0] == hashlib.sha256(body).hexdigest():
            blobs[path.name] = body
        else:
            reason = "blob ignored: its content does not match the sha256 in its name"
            warnings.append(LineProblem(str(path), 0, reason))
    return blobs


def import_runlog(data: ItemBytes) -> SessionImport:
    """Map the bytes of one run-log item to a session import.

    Raises:
        ItemSkipped: the file is not a run log.
        InvalidSessionId: the file stem is not a valid session id.
    """
    main = data.item.files[0]
    stem = main.name[: -len(runlog.RUNLOG_SUFFIX)]
    log = runlog.decode(data.contents.get(main, b""), run_id=stem, path=str(main))
    problems: list[LineProblem] = []
    blobs = _checked_blobs(data, main, problems)
    mtime_ns = data.mtimes_ns.get(main, 0)
    out = session_from_runlog(log, blobs, mtime_ns, str(main))
    out.warnings.extend(problems)
    return out
