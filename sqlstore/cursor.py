"""Event-log cursors in the mecatl ``cur/1`` format.

A cursor is the unpadded base64url of ``{"v":"cur/1","s":<id>,"g":<generation>,
"p":<position>}`` with all four values strings. The position is the decimal
count of records up to and including the record the cursor follows.

Decoding checks, in order: ``""`` is the start; bad base64, bad JSON, a missing
or unknown field, a non-string value, ``v != "cur/1"``, a foreign session, or a
position that is not a decimal count → ``CursorMalformed``; a generation other
than the log's current one → ``CursorExpired`` (the message names the cursor's
generation, never the current one). Whether the position is a record boundary
of *this* log can only be judged once the generation matches, so backends check
it after :func:`decode_cursor` (``CursorMalformed`` when it is past the end).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re

from sqlstore.errors import CursorExpired, CursorMalformed

CURSOR_VERSION = "cur/1"
_FIELDS = frozenset({"v", "s", "g", "p"})
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]*$")
_DECIMAL = re.compile(r"^(0|[1-9][0-9]{0,18})$")


def new_generation() -> str:
    """Mint a fresh log generation: 16 random lowercase hex characters."""
    return os.urandom(8).hex()


class CursorEncoder:
    """Encodes cursors of one log generation quickly.

    The JSON text up to the position is the same for every record, so its base64
    is computed once: JSON whitespace after the ``g`` member pads that prefix to a
    multiple of 3 bytes, where base64 output splits cleanly. Only the short tail
    (``"p":"N"}``) is encoded per record. Decoders see ordinary JSON.
    """

    __slots__ = ("_prefix",)

    def __init__(self, session_id: str, generation: str) -> None:
        head = json.dumps(
            {"v": CURSOR_VERSION, "s": session_id, "g": generation},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        raw = head[:-1].encode("utf-8") + b","
        raw += b" " * (-len(raw) % 3)
        self._prefix = base64.urlsafe_b64encode(raw).decode("ascii")

    def __call__(self, position: int) -> str:
        tail = f'"p":"{position}"}}'.encode("ascii")
        return self._prefix + base64.urlsafe_b64encode(tail).rstrip(b"=").decode("ascii")


_ENCODERS: dict[tuple[str, str], CursorEncoder] = {}
_ENCODERS_MAX = 1024
"""Encoders of recently appended-to logs (a log's prefix is reused by every append)."""


def encode_cursor(session_id: str, generation: str, position: int) -> str:
    """Return the cursor that follows record number ``position`` (1-based) of a log."""
    key = (session_id, generation)
    encoder = _ENCODERS.get(key)
    if encoder is None:
        if len(_ENCODERS) >= _ENCODERS_MAX:
            _ENCODERS.clear()
        encoder = _ENCODERS[key] = CursorEncoder(session_id, generation)
    return encoder(position)


def parse_cursor(cursor: str, session_id: str) -> tuple[str, int]:
    """Return the (generation, position) of a well-formed non-empty cursor of this session.

    Checks everything :func:`decode_cursor` checks except the generation, which
    only the log can judge: callers that keep positions (integrations that link
    records to one another) use it to read a cursor the store returned.

    Raises:
        CursorMalformed: the cursor is empty or not a ``cur/1`` cursor of this session.
    """
    if cursor == "":
        raise CursorMalformed("the empty cursor names no record")
    doc = _checked_fields(cursor, session_id)
    return doc["g"], int(doc["p"])


def decode_cursor(cursor: str, session_id: str, generation: str | None) -> int:
    """Return the position a cursor names, after checking it belongs to this log.

    Args:
        cursor: the cursor text; ``""`` means the start of the log (position 0).
        session_id: the session whose log is read.
        generation: the log's current generation, or ``None`` when no log exists
            (then every non-empty cursor has expired).

    Raises:
        CursorMalformed: the cursor is not a ``cur/1`` cursor of this session.
        CursorExpired: the cursor belongs to another generation of the log.
    """
    if cursor == "":
        return 0
    doc = _checked_fields(cursor, session_id)
    if generation is None or doc["g"] != generation:
        raise CursorExpired(f"cursor generation {doc['g']!r} is no longer current")
    return int(doc["p"])


def _checked_fields(cursor: str, session_id: str) -> dict[str, str]:
    if not isinstance(cursor, str) or not _BASE64URL.match(cursor) or len(cursor) % 4 == 1:
        raise CursorMalformed("cursor is not unpadded base64url")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        doc = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise CursorMalformed("cursor does not decode to JSON") from None
    if not isinstance(doc, dict) or set(doc) != _FIELDS:
        raise CursorMalformed("cursor JSON must have exactly the fields v, s, g and p")
    if not all(isinstance(value, str) for value in doc.values()):
        raise CursorMalformed("cursor fields must all be strings")
    if doc["v"] != CURSOR_VERSION:
        raise CursorMalformed(f"unknown cursor version {doc['v']!r}")
    if doc["s"] != session_id:
        raise CursorMalformed("cursor was issued for another session")
    if not _DECIMAL.match(doc["p"]):
        raise CursorMalformed("cursor position is not a record count")
    return doc


def check_boundary(position: int, length: int) -> None:
    """Raise ``CursorMalformed`` unless ``position`` is a record boundary of a log of ``length``."""
    if position > length:
        raise CursorMalformed(f"cursor position {position} is past the end of the log ({length})")
