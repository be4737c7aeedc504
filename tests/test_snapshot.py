"""The snapshot codec (SPEC §2.3): round trip, preservation of unknown keys, strict decoding."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstore import snapshot
from sqlstore.errors import SnapshotError
from sqlstore.model import (
    Ask,
    Counters,
    Kind,
    Limits,
    Message,
    Part,
    Principal,
    Relationship,
    State,
    ToolCall,
    ToolResult,
    Usage,
)
from sqlstore.session import Session
from sqlstore.snapshot import SNAPSHOT_VERSION

# -- strategies ------------------------------------------------------------------------

texts = st.text(max_size=12)
ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=20,
)
counts = st.integers(min_value=0, max_value=2**53)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**64), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)

MESSAGE_KEYS = {"role", "text", "tool_calls", "tool_result", "parts", "reasoning"}
SNAPSHOT_KEYS = {*Session.__dataclass_fields__} - {"extra"} | {"v"}

parts = st.builds(Part, kind=texts, mime_type=texts, data=st.binary(max_size=16), url=texts)
tool_calls = st.builds(ToolCall, id=texts, name=texts, args=texts)
tool_results = st.builds(ToolResult, call_id=texts, content=texts, is_error=st.booleans())
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    text=texts,
    tool_calls=st.lists(tool_calls, max_size=2),
    tool_result=st.none() | tool_results,
    parts=st.lists(parts, max_size=2),
    reasoning=texts,
    extra=st.dictionaries(texts.filter(lambda k: k not in MESSAGE_KEYS), json_values, max_size=2),
)
nonempty = st.text(min_size=1, max_size=8)
kind_and_relationship = st.one_of(
    st.tuples(st.sampled_from([Kind.MAIN, Kind.UNKNOWN]), st.just(Relationship())),
    st.tuples(
        st.just(Kind.SCHEDULED),
        st.builds(Relationship, schedule_name=nonempty, origin_session_id=texts),
    ),
    st.tuples(
        st.just(Kind.SUBAGENT),
        st.builds(Relationship, parent_session_id=nonempty, call_id=nonempty),
    ),
    st.tuples(
        st.just(Kind.PARALLEL_BRANCH),
        st.builds(
            Relationship,
            parent_session_id=nonempty,
            call_id=nonempty,
            branch_index=st.integers(min_value=0, max_value=2**31),
        ),
    ),
    st.tuples(
        st.just(Kind.TEAM_MEMBER),
        st.builds(Relationship, team_id=nonempty, member_name=nonempty, parent_session_id=texts),
    ),
)
times = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    """Generate a valid session exercising every field type."""
    state = draw(st.sampled_from(list(State)))
    kind, rel = draw(kind_and_relationship)
    return Session(
        id=draw(ids),
        state=state,
        mode=draw(st.sampled_from(["default", "plan", "acceptEdits"])),
        limits=draw(st.builds(Limits, counts, counts, counts)),
        counters=draw(st.builds(Counters, counts, counts, counts)),
        usage=draw(st.builds(Usage, counts, counts, counts, counts, counts)),
        messages=draw(st.lists(messages, max_size=3)),
        created_at=draw(times),
        title=draw(texts),
        provider_id=draw(texts),
        model_id=draw(texts),
        kind=kind,
        relationship=rel,
        owner=draw(st.none() | st.builds(Principal, texts, texts, texts, texts)),
        stop_reason=draw(texts),
        pending_ask=(
            draw(st.builds(Ask, texts, texts, texts, texts)) if state is State.AWAITING else None
        ),
        last_error=draw(texts) if state is State.FAILED else "",
        run_id=draw(texts),
        labels=draw(st.dictionaries(texts, texts, max_size=2)),
        extra=draw(
            st.dictionaries(texts.filter(lambda k: k not in SNAPSHOT_KEYS), json_values, max_size=3)
        ),
    )


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(sessions())
def test_decode_encode_round_trip(session: Session) -> None:
    """decode(encode(s)) == s for every valid session."""
    assert snapshot.decode(snapshot.encode(session)) == session


@FAST
@given(sessions())
def test_encoding_is_stable(session: Session) -> None:
    """Encoding a decoded snapshot gives the same bytes again."""
    blob = snapshot.encode(session)
    assert snapshot.encode(snapshot.decode(blob)) == blob


@FAST
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_snapshot_error(blob: bytes) -> None:
    """Any byte string either decodes to a valid session or raises SnapshotError."""
    with contextlib.suppress(SnapshotError):
        snapshot.decode(blob)


def _mutations() -> st.SearchStrategy[dict[str, Any]]:
    """Snapshot-shaped JSON documents whose fields are replaced by arbitrary JSON."""
    base = json.loads(snapshot.encode(Session(id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC))))
    keys = st.sampled_from([*sorted(base), "messages[0]", "extra"])

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        doc = dict(base)
        for _ in range(draw(st.integers(1, 3))):
            key = draw(keys)
            value = draw(json_values)
            if key == "messages[0]":
                doc["messages"] = [value]
            else:
                doc[key] = value
        return doc

    return build()


@FAST
@given(st.one_of(json_values, _mutations()))
def test_arbitrary_json_only_raises_snapshot_error(doc: Any) -> None:
    """Any JSON value either decodes to a valid session that re-encodes, or raises SnapshotError."""
    try:
        session = snapshot.decode(json.dumps(doc).encode())
    except SnapshotError:
        return
    assert snapshot.decode(snapshot.encode(session)) == session


@FAST
@given(st.dictionaries(texts.filter(lambda k: k not in SNAPSHOT_KEYS), json_values, max_size=4))
def test_unknown_top_level_keys_are_written_back_unchanged(unknown: dict[str, Any]) -> None:
    """Keys this version does not know survive decode and encode with equal JSON values."""
    doc = json.loads(snapshot.encode(Session(id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC))))
    doc.update(unknown)
    session = snapshot.decode(json.dumps(doc).encode())
    assert session.extra == unknown
    again = json.loads(snapshot.encode(session))
    for key, value in unknown.items():
        assert json.dumps(again[key], sort_keys=True) == json.dumps(value, sort_keys=True)


def test_unknown_keys_of_a_newer_writer_survive_byte_for_byte() -> None:
    """A nested unknown key's value is re-encoded to the same JSON text."""
    blob = snapshot.encode(Session(id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    doc = json.loads(blob)
    doc["environment_ref"] = {"Kind": "k8s", "ID": "pod-1", "Revision": 3, "tags": [1.5, None]}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
    assert snapshot.encode(snapshot.decode(text)) == text


def test_snapshot_shape() -> None:
    """The snapshot is one JSON object with the version tag, the fields, and base64 part data."""
    s = Session(
        id="s",
        created_at=datetime(2026, 6, 1, 12, 30, 45, 123456, tzinfo=UTC),
        messages=[Message(role="user", parts=[Part("image", "image/png", b"\x89PNG", "")])],
    )
    doc = json.loads(snapshot.encode(s))
    assert doc["v"] == SNAPSHOT_VERSION
    assert set(doc) == SNAPSHOT_KEYS
    assert doc["created_at"] == "2026-06-01T12:30:45.123456Z"
    assert doc["messages"][0]["parts"][0]["data"] == "iVBORw=="


# -- specific rejections -------------------------------------------------------------------


def _doc(**changes: Any) -> bytes:
    doc = json.loads(snapshot.encode(Session(id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC))))
    for key, value in changes.items():
        if value is ...:
            del doc[key]
        else:
            doc[key] = value
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    ("blob", "reason"),
    [
        (b"", "not JSON"),
        (b"\xff\xfe{", "not JSON"),
        (b"[1]", "not a JSON object"),
        (_doc(v="sqlstore-session/2"), "unknown snapshot version"),
        (_doc(v=...), "unknown snapshot version"),
        (_doc(id=...), "no id"),
        (_doc(id=""), "empty"),
        (_doc(id=7), "id must be a string"),
        (_doc(id="a\u0000b"), "NUL"),
        (_doc(state="paused"), "unknown state 'paused'"),
        (_doc(state=1), "state"),
        (_doc(kind="debug"), "unknown kind 'debug'"),
        (_doc(kind="subagent"), "needs parent_session_id"),
        (_doc(relationship={"schedule_name": "n"}), "empty relationship"),
        (_doc(relationship=[]), "relationship"),
        (_doc(pending_ask={"ask_id": "a"}), "pending_ask"),
        (_doc(state="awaiting"), "pending_ask"),
        (_doc(pending_ask="a"), "pending_ask"),
        (_doc(created_at=...), "no created_at"),
        (_doc(created_at="yesterday"), "RFC 3339"),
        (_doc(created_at="9999-12-31T23:59:59-01:00"), "out of range"),
        (_doc(labels={"a": 1}), "labels"),
        (_doc(messages=[{"role": "robot"}]), "role"),
        (_doc(messages=[{"parts": [{"data": "%%%"}]}]), "base64"),
        (_doc(counters={"turns": "1"}), "turns"),
        (_doc(usage={"input_tokens": True}), "input_tokens"),
        (_doc(owner=5), "owner"),
        (_doc(extra_number=float("nan")), "NaN is not a JSON number"),
        (_doc(extra_number=float("inf")), "Infinity is not a JSON number"),
        (_doc().replace(b'"labels"', b'"huge": 1e999, "labels"'), "out of range"),
    ],
)
def test_specific_rejections_name_the_reason(blob: bytes, reason: str) -> None:
    """Each kind of invalid snapshot raises SnapshotError whose message names the reason."""
    with pytest.raises(SnapshotError, match=reason):
        snapshot.decode(blob)


def test_awaiting_with_ask_is_accepted() -> None:
    """pending_ask is accepted while awaiting."""
    ask = {"ask_id": "a", "tool": "bash", "args": "{}", "reason": "r"}
    s = snapshot.decode(_doc(state="awaiting", pending_ask=ask))
    assert s.pending_ask == Ask("a", "bash", "{}", "r")


@pytest.mark.parametrize(
    "session",
    [
        Session(id="", created_at=datetime(2026, 1, 1, tzinfo=UTC)),
        Session(id="s", pending_ask=Ask("a")),
        Session(id="s", kind=Kind.SCHEDULED),
        Session(id="s", extra={"state": "x"}),
        Session(id="s", extra={"v": "x"}),
        Session(id="s", messages=[Message(extra={"text": "x"})]),
        Session(id="s", extra={"n": float("inf")}),
        Session(id="s", created_at=datetime(2026, 1, 1)),
    ],
    ids=[
        "empty id",
        "ask while idle",
        "bad kind",
        "extra shadows state",
        "extra shadows v",
        "message extra shadows text",
        "non-finite float",
        "naive created_at",
    ],
)
def test_encode_refuses_invalid_sessions(session: Session) -> None:
    """Encoding an invalid session raises SnapshotError instead of writing it."""
    with pytest.raises(SnapshotError):
        snapshot.encode(session)


def test_encode_refuses_non_sessions() -> None:
    """Only Session objects can be encoded."""
    with pytest.raises(SnapshotError, match="expected a Session"):
        snapshot.encode({"id": "s"})  # type: ignore[arg-type]


def test_decode_accepts_bytes_like_and_str() -> None:
    """decode takes bytes, bytearray, memoryview and str."""
    blob = snapshot.encode(Session(id="s", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    expected = snapshot.decode(blob)
    for form in (bytearray(blob), memoryview(blob), blob.decode()):
        assert snapshot.decode(form) == expected
