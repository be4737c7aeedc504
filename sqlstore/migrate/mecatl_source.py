"""A mecatl JSONL store directory as a migration source (JSONL-FORMATS.md §2).

Items are session families of ``sid-v2/`` (``<token>.session.json`` plus the
optional ``.events.jsonl`` and ``.tools.jsonl``) and the snapshot files of the
read-only ``sid-v1/`` layout. The session id is read from the content, never
from the file name. Lock files, temporaries and the derived inventory are
ignored; any other file is skipped with a reason. Symbolic links are never
followed: a linked ``sid-v2``/``sid-v1`` folder or a linked session file is
skipped with a reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from sqlstore import clock
from sqlstore.jsonl import LineProblem, parse_jsonl
from sqlstore.migrate.items import (
    ItemBytes,
    ItemFailed,
    ItemSkipped,
    LogEntry,
    SessionImport,
    SourceItem,
)
from sqlstore.migrate.mecatl_events import (
    EVENT_VERSION,
    GAP_VERSION,
    GENERATION_VERSION,
    audit_from_mecatl,
    event_from_mecatl,
)
from sqlstore.migrate.mecatl_mapping import MappingError, session_from_snapshot
from sqlstore.migrate.report import SKIP_NOT_A_SESSION
from sqlstore.model import JSON

V2_DIR = "sid-v2"
V1_DIR = "sid-v1"
ENVELOPE_VERSION = "sessnap-current-json/2"
SNAPSHOT_SUFFIX = ".session.json"
EVENTS_SUFFIX = ".events.jsonl"
TOOLS_SUFFIX = ".tools.jsonl"
V1_SUFFIX = ".session.jsonl"
IGNORED_SUFFIXES = (".family.lock",)
INVENTORY_DIR = ".session-inventory"
TOKEN_ID_CHARS = 40
TOKEN_HASH_HEX = 32
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_GO_ZERO_TIME = "0001-01-01T00:00:00Z"
SKIP_LINK = "a symbolic link (not followed)"


def family_token(session_id: str, layout: str = V2_DIR) -> str:
    """Return the file-name token of a session id (``sid-v2-<safe id>-<32 hex>``)."""
    safe = _UNSAFE.sub("_", session_id[:TOKEN_ID_CHARS]) or "id"
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:TOKEN_HASH_HEX]
    return f"{layout}-{safe}-{digest}"


def is_mecatl_store(root: Path) -> bool:
    """True when ``root`` looks like a mecatl store directory."""
    return (root / V2_DIR).is_dir() or (root / V1_DIR).is_dir()


def _real_dir(path: Path, skipped: list[tuple[str, str]]) -> bool:
    """True for a directory that is not a symlink (a symlink is reported as skipped)."""
    if path.is_symlink():
        skipped.append((path.name, SKIP_LINK))
        return False
    return path.is_dir()


def _ignored(name: str) -> bool:
    return name.endswith(IGNORED_SUFFIXES) or ".tmp-" in name or name == INVENTORY_DIR


def scan_mecatl(root: Path) -> tuple[list[SourceItem], list[tuple[str, str]]]:
    """Return the items of a mecatl store (``sid-v2`` first) and the skipped entries."""
    items: list[SourceItem] = []
    skipped: list[tuple[str, str]] = []
    v2 = root / V2_DIR
    if _real_dir(v2, skipped):
        families: dict[str, list[Path]] = {}
        for path in sorted(v2.iterdir()):
            name = path.name
            if _ignored(name):
                continue
            if path.is_symlink():
                skipped.append((f"{V2_DIR}/{name}", SKIP_LINK))
                continue
            for suffix in (SNAPSHOT_SUFFIX, EVENTS_SUFFIX, TOOLS_SUFFIX):
                if name.endswith(suffix) and path.is_file():
                    families.setdefault(name[: -len(suffix)], []).append(path)
                    break
            else:
                skipped.append((f"{V2_DIR}/{name}", "not a mecatl session file"))
        for token, paths in sorted(families.items()):
            suffixes = (SNAPSHOT_SUFFIX, EVENTS_SUFFIX, TOOLS_SUFFIX)
            # A family member that is a link is skipped above and left out of the item.
            ordered = tuple(
                v2 / f"{token}{suffix}"
                for suffix in suffixes
                if not (v2 / f"{token}{suffix}").is_symlink()
            )
            if ordered[0] not in paths:
                skipped.append((f"{V2_DIR}/{token}", "event or tool log without a snapshot"))
                continue
            items.append(SourceItem(f"{V2_DIR}/{token}", ordered))
    v1 = root / V1_DIR
    if _real_dir(v1, skipped):
        for path in sorted(v1.iterdir()):
            if _ignored(path.name):
                continue
            if path.is_symlink():
                skipped.append((f"{V1_DIR}/{path.name}", SKIP_LINK))
            elif path.name.endswith(V1_SUFFIX) and path.is_file():
                items.append(SourceItem(f"{V1_DIR}/{path.name}", (path,)))
            else:
                skipped.append((f"{V1_DIR}/{path.name}", "not a sid-v1 snapshot file"))
    for path in sorted(root.iterdir()):
        if path.name not in (V1_DIR, V2_DIR) and not _ignored(path.name):
            reason = SKIP_LINK if path.is_symlink() else "not part of a mecatl store"
            skipped.append((path.name, reason))
    return items, skipped


def import_mecatl(data: ItemBytes) -> SessionImport:
    """Map the bytes of one mecatl item to a session import.

    Raises:
        ItemSkipped: the snapshot is not a version this importer knows.
        ItemFailed: the snapshot cannot be decoded or mapped.
    """
    if data.item.name.startswith(f"{V1_DIR}/"):
        return _import_v1(data)
    snap_path = data.item.files[0]
    token = snap_path.name[: -len(SNAPSHOT_SUFFIX)]
    events_path = snap_path.with_name(token + EVENTS_SUFFIX)
    tools_path = snap_path.with_name(token + TOOLS_SUFFIX)
    raw = data.contents.get(snap_path)
    if raw is None:
        raise ItemFailed(f"{snap_path}: the snapshot disappeared while importing")
    try:
        envelope = json.loads(raw)
    except ValueError as exc:
        raise ItemFailed(f"{snap_path}: not JSON: {exc}") from None
    if not isinstance(envelope, dict) or envelope.get("v") != ENVELOPE_VERSION:
        version = envelope.get("v") if isinstance(envelope, dict) else None
        raise ItemSkipped(SKIP_NOT_A_SESSION, f"{snap_path}: unknown envelope version {version!r}")
    modified = envelope.get("modified_at")
    if not isinstance(modified, str) or modified in ("", _GO_ZERO_TIME):
        raise ItemFailed(f"{snap_path}: envelope has no modified_at")
    out = _session(envelope.get("snapshot"), str(snap_path))
    try:
        out.modified_at_ns = clock.to_ns(clock.parse_rfc3339(modified))
    except ValueError as exc:
        raise ItemFailed(f"{snap_path}: {exc}") from None
    if events_path in data.contents:
        _read_events(data.contents[events_path], str(events_path), out)
    if tools_path in data.contents:
        _read_tools(data.contents[tools_path], str(tools_path), out)
    return out


def _session(snapshot: JSON, where: str) -> SessionImport:
    try:
        return SessionImport(session=session_from_snapshot(snapshot))
    except (MappingError, TypeError, ValueError) as exc:
        raise ItemFailed(f"{where}: {exc}") from None


def _import_v1(data: ItemBytes) -> SessionImport:
    path = data.item.files[0]
    parsed = parse_jsonl(data.contents.get(path, b""), str(path))
    snapshots = [(line, v) for line, v in parsed.lines if isinstance(v, dict) and v]
    if not snapshots:
        raise ItemSkipped(SKIP_NOT_A_SESSION, f"{path}: no snapshot line")
    line, last = snapshots[-1]
    out = _session(last, f"{path}:{line}")
    out.modified_at_ns = data.mtimes_ns.get(path, 0)
    out.warnings.extend(parsed.problems)
    return out


def _read_events(raw: bytes, where: str, out: SessionImport) -> None:
    parsed = parse_jsonl(raw, where)
    out.warnings.extend(parsed.problems)
    lines = parsed.lines
    if not lines:
        return
    first_line, header = lines[0]
    if not isinstance(header, dict) or header.get("v") != GENERATION_VERSION:
        out.warnings.append(
            LineProblem(where, first_line, "unversioned event log (no generation header) skipped")
        )
        return
    generation = header.get("g")
    out.generation = generation if isinstance(generation, str) and generation else None
    for line, value in lines[1:]:
        version = value.get("v") if isinstance(value, dict) else None
        try:
            if version == EVENT_VERSION and isinstance(value, dict):
                out.log.append(LogEntry(event=event_from_mecatl(value.get("ev"))))
            elif version == GAP_VERSION and isinstance(value, dict):
                reason = value.get("r", "")
                out.log.append(LogEntry(gap_reason=reason if isinstance(reason, str) else ""))
            else:
                out.warnings.append(LineProblem(where, line, f"unknown record {version!r} skipped"))
        except (MappingError, TypeError, ValueError) as exc:
            out.warnings.append(LineProblem(where, line, f"event skipped: {exc}"))


def _read_tools(raw: bytes, where: str, out: SessionImport) -> None:
    parsed = parse_jsonl(raw, where)
    out.warnings.extend(parsed.problems)
    session_id = out.session.id
    for line, value in parsed.lines:
        try:
            out.audit.append(audit_from_mecatl(value, session_id))
        except (MappingError, TypeError, ValueError) as exc:
            out.warnings.append(LineProblem(where, line, f"audit record skipped: {exc}"))
            continue
        named = value.get("session_id") if isinstance(value, dict) else None
        if isinstance(named, str) and named != session_id:
            problem = f"session_id {named!r} differs from the snapshot's; imported under the latter"
            out.warnings.append(LineProblem(where, line, problem))
