"""Value types of the domain model: id validation, kind/relationship rules, JSON forms."""

from __future__ import annotations

import pytest

from sqlstore.errors import InvalidSessionId, InvalidSessionMetadata, StoreError
from sqlstore.model import (
    MAX_SESSION_ID_BYTES,
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
    validate_kind,
    validate_session_id,
)

# -- session ids ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "good",
    [
        "a",
        "sid-v2/with spaces and ü",
        "x" * MAX_SESSION_ID_BYTES,
        "é" * (MAX_SESSION_ID_BYTES // 2),
        "😀" * (MAX_SESSION_ID_BYTES // 4),
        "P" * 200 + "-one",
        "\t\n",
    ],
)
def test_valid_ids_are_returned_unchanged(good: str) -> None:
    """Non-empty text without NUL or lone surrogates, up to 4096 UTF-8 bytes, is valid."""
    assert validate_session_id(good) is good


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("", "empty"),
        ("a\x00b", "NUL"),
        ("\x00", "NUL"),
        ("a\ud800b", "surrogate"),
        ("\udfff", "surrogate"),
        ("x" * (MAX_SESSION_ID_BYTES + 1), "4097 bytes"),
        ("é" * (MAX_SESSION_ID_BYTES // 2) + "a", "4097 bytes"),
        ("😀" * (MAX_SESSION_ID_BYTES // 4 + 1), "4100 bytes"),
    ],
)
def test_invalid_ids_raise_invalid_session_id(bad: str, reason: str) -> None:
    """Empty, NUL, lone-surrogate and over-long ids raise InvalidSessionId naming why."""
    with pytest.raises(InvalidSessionId, match=reason):
        validate_session_id(bad)


@pytest.mark.parametrize("bad", [None, 5, b"bytes", ["a"]])
def test_non_string_ids_raise_invalid_session_id(bad: object) -> None:
    """An id that is not a str raises InvalidSessionId."""
    with pytest.raises(InvalidSessionId, match="must be str"):
        validate_session_id(bad)


def test_invalid_session_id_is_a_value_error_and_store_error_with_a_hint() -> None:
    """InvalidSessionId is both a ValueError and a StoreError, and carries a hint."""
    with pytest.raises(InvalidSessionId) as info:
        validate_session_id("")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, StoreError)
    assert info.value.hint


# -- kind and relationship -----------------------------------------------------------

VALID = [
    (Kind.MAIN, Relationship()),
    (Kind.UNKNOWN, Relationship()),
    (Kind.SCHEDULED, Relationship(schedule_name="nightly")),
    (Kind.SCHEDULED, Relationship(schedule_name="nightly", origin_session_id="origin")),
    (Kind.SUBAGENT, Relationship(parent_session_id="parent", call_id="call-sub")),
    (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="parent", call_id="call-par", branch_index=2),
    ),
    (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="parent", call_id="call-par", branch_index=0),
    ),
    (Kind.TEAM_MEMBER, Relationship(team_id="team", member_name="reviewer")),
    (
        Kind.TEAM_MEMBER,
        Relationship(team_id="team", member_name="reviewer", parent_session_id="parent"),
    ),
]


@pytest.mark.parametrize(("kind", "rel"), VALID)
def test_valid_kind_relationship_pairs_pass(kind: Kind, rel: Relationship) -> None:
    """Every kind accepts the relationship fields it needs (and its optional ones)."""
    validate_kind(kind, rel)


INVALID = [
    (Kind.MAIN, Relationship(parent_session_id="p"), "empty relationship"),
    (Kind.MAIN, Relationship(branch_index=0), "empty relationship"),
    (Kind.UNKNOWN, Relationship(schedule_name="s"), "empty relationship"),
    (Kind.SCHEDULED, Relationship(), "needs schedule_name"),
    (Kind.SCHEDULED, Relationship(origin_session_id="o"), "needs schedule_name"),
    (Kind.SCHEDULED, Relationship(schedule_name="s", team_id="t"), "may only set"),
    (Kind.SUBAGENT, Relationship(call_id="c"), "needs parent_session_id and call_id"),
    (Kind.SUBAGENT, Relationship(parent_session_id="p"), "needs parent_session_id and call_id"),
    (
        Kind.SUBAGENT,
        Relationship(parent_session_id="p", call_id="c", branch_index=1),
        "only a parallel_branch",
    ),
    (
        Kind.SUBAGENT,
        Relationship(parent_session_id="p", call_id="c", team_id="t"),
        "schedule or team",
    ),
    (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="p", call_id="c"),
        "branch_index >= 0",
    ),
    (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="p", call_id="c", branch_index=-1),
        "branch_index >= 0",
    ),
    (Kind.PARALLEL_BRANCH, Relationship(branch_index=1), "needs parent_session_id"),
    (
        Kind.PARALLEL_BRANCH,
        Relationship(parent_session_id="p", call_id="c", branch_index=0, schedule_name="s"),
        "schedule or team",
    ),
    (Kind.TEAM_MEMBER, Relationship(team_id="t"), "needs team_id and member_name"),
    (Kind.TEAM_MEMBER, Relationship(member_name="m"), "needs team_id and member_name"),
    (
        Kind.TEAM_MEMBER,
        Relationship(team_id="t", member_name="m", call_id="c"),
        "schedule or call",
    ),
    (
        Kind.TEAM_MEMBER,
        Relationship(team_id="t", member_name="m", branch_index=0),
        "schedule or call",
    ),
]


@pytest.mark.parametrize(("kind", "rel", "reason"), INVALID)
def test_invalid_kind_relationship_pairs_raise(kind: Kind, rel: Relationship, reason: str) -> None:
    """A relationship that does not fit the kind raises InvalidSessionMetadata naming why."""
    with pytest.raises(InvalidSessionMetadata, match=reason):
        validate_kind(kind, rel)


def test_every_kind_is_covered_by_valid_and_invalid_cases() -> None:
    """The tables above exercise every Kind both ways."""
    assert {k for k, _ in VALID} == set(Kind)
    assert {k for k, _, _ in INVALID} == set(Kind)


def test_a_kind_that_is_not_a_kind_raises() -> None:
    """A plain string or unknown value in place of a Kind is refused."""
    with pytest.raises(InvalidSessionMetadata, match="unknown session kind"):
        validate_kind("debug", Relationship())  # type: ignore[arg-type]


def test_enums_are_str_enums() -> None:
    """State and Kind compare equal to their strings and parse from them."""
    assert State.IDLE == "idle"
    assert Kind("subagent") is Kind.SUBAGENT
    assert {s for s in State if s.terminal} == {State.COMPLETED, State.FAILED, State.CANCELLED}


# -- JSON forms ------------------------------------------------------------------------

SAMPLES = [
    Limits(7, 21, 3),
    Counters(1, 2, 3),
    Usage(1200, 340, 800, 200, 9),
    Principal("https://issuer", "alice", "password", "Alice"),
    Relationship(parent_session_id="p", call_id="c", branch_index=2),
    Ask("ask-1", "Bash", '{"command":"true"}', "outside workspace"),
    ToolCall("c1", "bash", '{"cmd":"ls"}'),
    ToolResult("c1", "out", True),
    Part("image", "image/png", b"\x89PNG\x00\xff", "https://x/y.png"),
    Message(
        role="assistant",
        text="hi",
        tool_calls=[ToolCall("c1", "bash", "{}")],
        parts=[Part("image", "image/png", b"\x01", "")],
        reasoning="blob",
        extra={"phase": "final", "item_id": {"a": [1, 2]}},
    ),
    Message(role="tool", tool_result=ToolResult("c1", "x", False)),
]


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: type(v).__name__)
def test_value_types_round_trip_through_json(value: object) -> None:
    """from_json(to_json(v)) == v for every value type."""
    cls = type(value)
    assert cls.from_json(value.to_json()) == value  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "cls", [Limits, Counters, Usage, Principal, Relationship, Ask, ToolCall, ToolResult, Part]
)
def test_from_json_fills_defaults_for_missing_keys(cls: type) -> None:
    """A missing key takes the field's default."""
    assert cls.from_json({}) == cls()


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (Limits, {"max_turns": "7"}),
        (Limits, {"max_turns": True}),
        (Counters, {"turns": 1.5}),
        (Usage, {"input_tokens": None}),
        (Principal, {"issuer": 1}),
        (Relationship, {"branch_index": "2"}),
        (Relationship, {"branch_index": False}),
        (ToolResult, {"is_error": "yes"}),
        (ToolCall, {"args": {"raw": "json"}}),
        (Message, {"tool_calls": {}}),
        (Limits, []),
    ],
)
def test_from_json_is_strict_about_types(cls: type, data: object) -> None:
    """A value of the wrong JSON type is a TypeError (bools are not ints)."""
    with pytest.raises(TypeError):
        cls.from_json(data)


def test_part_data_must_be_base64() -> None:
    """Part data that is not base64 raises ValueError."""
    with pytest.raises(ValueError, match="base64"):
        Part.from_json({"data": "not base64!"})
    assert Part.from_json({"data": "AAE="}).data == b"\x00\x01"


def test_message_role_must_be_known() -> None:
    """A message role outside system/user/assistant/tool is refused."""
    with pytest.raises(ValueError, match="role"):
        Message.from_json({"role": "robot"})


def test_message_extra_keeps_unknown_keys_and_refuses_reserved_ones() -> None:
    """Unknown message keys go to extra and back; extra may not shadow a known key."""
    m = Message.from_json({"role": "user", "text": "x", "phase": "p"})
    assert m.extra == {"phase": "p"}
    assert m.to_json()["phase"] == "p"
    with pytest.raises(ValueError, match="reserved"):
        Message(extra={"text": "shadow"}).to_json()


def test_usage_adds_field_by_field_and_knows_zero() -> None:
    """Usage + Usage sums every counter; is_zero is True only for all zeros."""
    assert Usage(1, 2, 3, 4, 5) + Usage(10, 20, 30, 40, 50) == Usage(11, 22, 33, 44, 55)
    assert Usage().is_zero()
    assert not Usage(reasoning_tokens=1).is_zero()


def test_principal_identity_is_issuer_and_subject() -> None:
    """Two principals with the same issuer and subject share an identity."""
    assert Principal("i", "s", "a", "A").identity == Principal("i", "s", "b", "B").identity


def test_relationship_is_empty_only_without_fields() -> None:
    """is_empty is False as soon as any field (even branch_index 0) is set."""
    assert Relationship().is_empty()
    assert not Relationship(branch_index=0).is_empty()
