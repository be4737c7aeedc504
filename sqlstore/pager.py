"""Keyset cursors for paging the session inventory (``sessions.page``).

A pager cursor pins the scope it was issued for (all sessions, or one owner),
the inventory generation at issue time (bumped by every save, create and
delete) and the last row returned (modified_at in ns, id). Any mismatch — other
scope, newer generation, a row that no longer sits where the cursor says, or a
cursor that does not decode — raises ``MetadataCursorRestart``: page again
from the start. Event appends and audit records move a session's
``modified_at`` without bumping the generation, so a long listing is not
restarted by every append (a session written during paging can move to an
earlier page).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass

from sqlstore.errors import MetadataCursorRestart
from sqlstore.model import Principal

PAGER_VERSION = "page/1"


def scope_key(owner: Principal | None, enforce_owner: bool) -> str:
    """Return the scope a listing is in: ``all``, or one owner's hashed identity."""
    if not enforce_owner:
        return "all"
    if owner is None:
        return "owner:none"
    digest = hashlib.sha256(json.dumps([owner.issuer, owner.subject]).encode("utf-8"))
    return "owner:" + digest.hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class PagerPosition:
    """Where the previous page ended."""

    scope: str
    generation: int
    modified_at_ns: int
    session_id: str


def encode_pager_cursor(pos: PagerPosition) -> str:
    """Encode a pager position as unpadded base64url JSON."""
    doc = {
        "v": PAGER_VERSION,
        "scope": pos.scope,
        "gen": pos.generation,
        "m": pos.modified_at_ns,
        "id": pos.session_id,
    }
    raw = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_pager_cursor(cursor: str, scope: str, generation: int) -> PagerPosition:
    """Decode a pager cursor issued for ``scope`` at ``generation``.

    Raises:
        MetadataCursorRestart: the cursor does not decode, or was issued for another
            scope or an older inventory generation.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        doc = json.loads(raw.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("v") != PAGER_VERSION:
            raise ValueError("not a pager cursor")
        pos = PagerPosition(
            scope=str(doc["scope"]),
            generation=int(doc["gen"]),
            modified_at_ns=int(doc["m"]),
            session_id=str(doc["id"]),
        )
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise MetadataCursorRestart("the page cursor does not decode") from None
    if pos.scope != scope:
        raise MetadataCursorRestart("the page cursor was issued for another owner scope")
    if pos.generation != generation:
        raise MetadataCursorRestart("the session inventory changed since the cursor was issued")
    return pos
