"""Event-log cursors in the mecatl ``cur/1`` format (SPEC §3.2)."""

from __future__ import annotations

import base64
import contextlib
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstore.cursor import (
    CURSOR_VERSION,
    check_boundary,
    decode_cursor,
    encode_cursor,
    new_generation,
)
from sqlstore.errors import CursorExpired, CursorMalformed

GEN = "9f1c2a7be04d5e11"


def raw(doc: Any) -> str:
    """Encode any JSON value the way a cursor is encoded (unpadded base64url)."""
    text = json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).rstrip(b"=").decode()


def fields(**changes: Any) -> dict[str, Any]:
    """A valid cursor document for session s1 at position 3, with ``changes`` applied."""
    doc: dict[str, Any] = {"v": CURSOR_VERSION, "s": "s1", "g": GEN, "p": "3"}
    for key, value in changes.items():
        if value is ...:
            del doc[key]
        else:
            doc[key] = value
    return doc


# -- round trip and shape ----------------------------------------------------------------


@pytest.mark.parametrize("session_id", ["s1", "ü/ñ 😀", "x" * 1024, "P" * 200 + "-one"])
@pytest.mark.parametrize("position", [0, 1, 5, 10**18])
def test_round_trip(session_id: str, position: int) -> None:
    """decode_cursor(encode_cursor(id, g, p), id, g) gives back p."""
    cursor = encode_cursor(session_id, GEN, position)
    assert decode_cursor(cursor, session_id, GEN) == position


def test_cursor_is_unpadded_base64url_of_four_strings() -> None:
    """A cursor is unpadded base64url JSON {"v","s","g","p"} with string values."""
    cursor = encode_cursor("s1", GEN, 42)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)
    doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert doc == {"v": "cur/1", "s": "s1", "g": GEN, "p": "42"}
    assert cursor != ""


def test_empty_cursor_is_the_start() -> None:
    """The empty cursor means position 0, even when no log exists."""
    assert decode_cursor("", "s1", GEN) == 0
    assert decode_cursor("", "s1", None) == 0


def test_ids_sharing_a_prefix_get_distinct_cursors() -> None:
    """Cursors of two ids that share a 200-byte prefix do not resolve for each other."""
    a, b = "P" * 200 + "-one", "P" * 200 + "-two"
    with pytest.raises(CursorMalformed):
        decode_cursor(encode_cursor(a, GEN, 1), b, GEN)


def test_new_generation_is_16_random_hex_chars() -> None:
    """Generations are 16 lowercase hex characters and differ between calls."""
    gens = {new_generation() for _ in range(50)}
    assert len(gens) == 50
    assert all(re.fullmatch(r"[0-9a-f]{16}", g) for g in gens)


# -- the malformed family ----------------------------------------------------------------------

MALFORMED = {
    "not base64 (symbols)": "!!!!",
    "not base64 (padding)": raw(fields()) + "==",
    "not base64 (space)": "eyJ2 Ijo",
    "not base64 (impossible length)": "a",
    "not base64 (standard alphabet)": base64.b64encode(b'{"v":"cur/1"}>>>?').decode(),
    "base64 of non-JSON": base64.urlsafe_b64encode(b"hello world").rstrip(b"=").decode(),
    "base64 of non-UTF-8": base64.urlsafe_b64encode(b"\xff\xfe\xfd").rstrip(b"=").decode(),
    "JSON array": raw(["cur/1", "s1", GEN, "3"]),
    "JSON string": raw("cur/1"),
    "JSON null": raw(None),
    "unknown version": raw(fields(v="cur/999")),
    "empty version": raw(fields(v="")),
    "unknown field": raw(fields(x="1")),
    "missing v": raw(fields(v=...)),
    "missing s": raw(fields(s=...)),
    "missing g": raw(fields(g=...)),
    "missing p": raw(fields(p=...)),
    "non-string p": raw(fields(p=3)),
    "non-string g": raw(fields(g=None)),
    "non-string s": raw(fields(s=["s1"])),
    "non-string v": raw(fields(v=1)),
    "foreign session": encode_cursor("other", GEN, 3),
    "position not decimal": raw(fields(p="abc")),
    "position negative": raw(fields(p="-1")),
    "position with sign": raw(fields(p="+1")),
    "position leading zero": raw(fields(p="01")),
    "position fractional": raw(fields(p="1.5")),
    "position empty": raw(fields(p="")),
    "position too long": raw(fields(p="1" * 20)),
    "position with spaces": raw(fields(p=" 3")),
    "position non-ASCII digits": raw(fields(p="٣")),
}


@pytest.mark.parametrize("cursor", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_cursors_are_rejected(cursor: str) -> None:
    """Every member of the malformed family raises CursorMalformed, never a position."""
    with pytest.raises(CursorMalformed):
        decode_cursor(cursor, "s1", GEN)


@pytest.mark.parametrize("cursor", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_wins_over_expired(cursor: str) -> None:
    """Malformedness is judged before the generation, so a stale log does not mask it."""
    with pytest.raises(CursorMalformed):
        decode_cursor(cursor, "s1", "0000000000000000")


def test_malformed_cursor_error_has_a_hint() -> None:
    """CursorMalformed tells the user how to start again."""
    with pytest.raises(CursorMalformed) as info:
        decode_cursor("!!!!", "s1", GEN)
    assert "empty cursor" in info.value.hint
    assert isinstance(info.value, ValueError)


# -- expiry ----------------------------------------------------------------------------------------


def test_cursor_of_another_generation_expires() -> None:
    """A cursor minted under another generation raises CursorExpired naming its own generation."""
    cursor = encode_cursor("s1", GEN, 3)
    with pytest.raises(CursorExpired) as info:
        decode_cursor(cursor, "s1", "0123456789abcdef")
    assert GEN in str(info.value)
    assert "0123456789abcdef" not in str(info.value)


def test_cursor_for_a_log_that_no_longer_exists_expires() -> None:
    """Without a current log (generation None) every non-empty cursor has expired."""
    with pytest.raises(CursorExpired):
        decode_cursor(encode_cursor("s1", GEN, 1), "s1", None)


# -- record boundaries ------------------------------------------------------------------------


@pytest.mark.parametrize(("position", "length"), [(0, 0), (0, 5), (5, 5), (3, 5)])
def test_positions_within_the_log_are_boundaries(position: int, length: int) -> None:
    """Positions from 0 to the log length are record boundaries."""
    check_boundary(position, length)


def test_position_past_the_end_is_malformed() -> None:
    """A position beyond the last record is CursorMalformed."""
    with pytest.raises(CursorMalformed, match="past the end"):
        check_boundary(6, 5)


# -- fuzz ---------------------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None)


@FUZZ
@given(st.text(max_size=80))
def test_arbitrary_strings_only_raise_cursor_errors(cursor: str) -> None:
    """Any string decodes to a position or raises CursorMalformed/CursorExpired."""
    try:
        position = decode_cursor(cursor, "s1", GEN)
    except (CursorMalformed, CursorExpired):
        return
    assert isinstance(position, int) and position >= 0


@FUZZ
@given(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_="))
def test_arbitrary_base64url_only_raises_cursor_errors(cursor: str) -> None:
    """Strings in the base64url alphabet decode or raise only the cursor errors."""
    with contextlib.suppress(CursorMalformed, CursorExpired):
        decode_cursor(cursor, "s1", GEN)


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(["v", "s", "g", "p", "x"]),
        json_scalars | st.sampled_from(["cur/1", "s1", GEN, "0", "7"]),
    )
)
def test_arbitrary_cursor_documents_only_raise_cursor_errors(doc: dict[str, Any]) -> None:
    """Cursor-shaped JSON documents decode to their position or raise the cursor errors."""
    try:
        position = decode_cursor(raw(doc), "s1", GEN)
    except (CursorMalformed, CursorExpired):
        return
    assert doc == {"v": "cur/1", "s": "s1", "g": GEN, "p": str(position)}


@FUZZ
@given(
    st.text(min_size=1, max_size=40),
    st.text(alphabet="0123456789abcdef", min_size=16, max_size=16),
    st.integers(min_value=0, max_value=10**18),
)
def test_round_trip_property(session_id: str, generation: str, position: int) -> None:
    """Every (id, generation, position) survives encode then decode."""
    cursor = encode_cursor(session_id, generation, position)
    assert decode_cursor(cursor, session_id, generation) == position
