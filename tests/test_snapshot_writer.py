"""The snapshot writer: the same bytes as json.dumps of to_json, with long strings cached."""

from __future__ import annotations

import json
import multiprocessing
import threading
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstore import SQLiteStore, snapshot, snapshot_writer
from sqlstore.errors import SnapshotError
from sqlstore.model import (
    Ask,
    Kind,
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
from sqlstore.snapshot_writer import STRING_CACHE_MIN_CHARS, _StringCache

# Written once from golden_session() by the codec as it was before the writer
# (json.dumps of to_json, commit bfb1ffd); never regenerate it with the new code.
GOLDEN = Path(__file__).parent / "snapshots" / "v1-golden.json"
LONG = STRING_CACHE_MIN_CHARS + 40


def reference(session: Session) -> bytes:
    """Encode as the codec did before the writer: json.dumps of to_json."""
    return json.dumps(
        snapshot.to_json(session), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


@pytest.fixture(autouse=True)
def _cold_cache() -> None:
    """Each test starts with an empty long-string cache."""
    snapshot_writer.clear_string_cache()


def golden_session() -> Session:
    """Return a session touching every field and every kind of string escape."""
    prose = ('Line one with a "quote" and a back\\slash.\n\tTabbed; é, 漢字, 🙂.\r\n' * 8)[:LONG]
    clean = ("plain words, no escapes at all, just ASCII and non-ASCII: ü ø 漢 🙂 " * 8)[:LONG]
    odd = ("control \x00\x01\x1f\b\f and \x7f and \u2028\u2029 " * 12)[:LONG]
    return Session(
        id="golden-session-1",
        state=State.AWAITING,
        mode="plan",
        usage=Usage(10, 20, 3, 4, 5),
        messages=[
            Message(role="system", text=clean),
            Message(role="user", text=prose, parts=[Part("image", "image/png", bytes(range(256)))]),
            Message(
                role="assistant",
                text="short",
                tool_calls=[ToolCall("c1", "write_file", json.dumps({"body": prose}))],
                reasoning=odd,
                extra={"newer_field": {"n": 1.5, "list": [None, True, "x"]}},
            ),
            Message(role="tool", tool_result=ToolResult("c1", clean + odd, is_error=True)),
        ],
        created_at=datetime(2026, 11, 30, 7, 0, 0, 123456, tzinfo=UTC),
        title="Golden ✓",
        provider_id="prov",
        model_id="model-x",
        kind=Kind.SUBAGENT,
        relationship=Relationship(parent_session_id="parent", call_id="call-9"),
        owner=Principal("iss", "sub", "pw", "Ann"),
        pending_ask=Ask("a1", "bash", '{"cmd": "ls"}', prose),
        run_id="run-7",
        labels={"task": clean, "workdir": "/tmp/ü"},
        extra={"environment_ref": {"Kind": "k8s", "Rev": 3}, "long": odd},
    )


def test_golden_snapshot_is_written_byte_for_byte() -> None:
    """The writer gives the exact bytes the json.dumps codec wrote (file made by the old code)."""
    assert snapshot.encode(golden_session()) == GOLDEN.read_bytes()
    assert snapshot.encode(golden_session()) == GOLDEN.read_bytes()  # from the cache


def test_golden_snapshot_still_decodes() -> None:
    """A snapshot written by the old codec decodes to the same session."""
    assert snapshot.decode(GOLDEN.read_bytes()) == golden_session()


# -- equality with the reference on random sessions -----------------------------------------

long_texts = st.text(min_size=LONG, max_size=LONG + 60)
escapes = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028", "é"])


@st.composite
def strings(draw: st.DrawFn) -> str:
    """Short or long text, long text sometimes clean ASCII, sometimes with one escape."""
    shape = draw(st.sampled_from(["short", "long", "clean", "one-escape"]))
    if shape == "short":
        return draw(st.text(max_size=12))
    if shape == "long":
        return draw(long_texts)
    clean = draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=LONG))
    clean = clean.replace('"', "").replace("\\", "").ljust(LONG, "x")
    if shape == "clean":
        return clean
    at = draw(st.integers(0, len(clean)))
    return clean[:at] + draw(escapes) + clean[at:]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | strings(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
messages = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    text=strings(),
    tool_calls=st.lists(st.builds(ToolCall, id=strings(), name=strings(), args=strings())),
    tool_result=st.none()
    | st.builds(ToolResult, call_id=strings(), content=strings(), is_error=st.booleans()),
    parts=st.lists(st.builds(Part, kind=strings(), data=st.binary(max_size=400), url=strings())),
    reasoning=strings(),
    extra=st.dictionaries(st.sampled_from(["x", "y", "ü"]), json_values, max_size=2),
)


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    """Generate a valid session with long and short strings in every string field."""
    return Session(
        id=draw(strings().filter(lambda s: s and "\x00" not in s)),
        state=State.IDLE,
        messages=draw(st.lists(messages, max_size=4)),
        title=draw(strings()),
        provider_id=draw(strings()),
        model_id=draw(strings()),
        owner=draw(st.none() | st.builds(Principal, strings(), strings(), strings(), strings())),
        stop_reason=draw(strings()),
        last_error=draw(strings()),
        run_id=draw(strings()),
        labels=draw(st.dictionaries(strings(), strings(), max_size=2)),
        extra=draw(st.dictionaries(st.sampled_from(["a", "newer", "ü"]), json_values, max_size=2)),
    )


FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(sessions())
def test_bytes_equal_the_reference_cold_and_warm(session: Session) -> None:
    """encode gives json.dumps(to_json(s)) bytes, on a cold cache and again from the cache."""
    try:
        expected = reference(session)
    except (ValueError, SnapshotError):  # a lone surrogate or an infinite float: refused
        with pytest.raises(SnapshotError):
            snapshot.encode(session)
        return
    snapshot_writer.clear_string_cache()
    assert snapshot.encode(session) == expected
    assert snapshot.encode(session) == expected
    assert snapshot.decode(expected) == session


@pytest.mark.parametrize("base", ["a", "ü", "漢", "🙂"], ids=["ascii", "latin1", "ucs2", "ucs4"])
@pytest.mark.parametrize("char", [chr(c) for c in range(0x20)] + ['"', "\\", "\x7f", "\u2028"])
def test_every_escaped_character_in_a_long_string(base: str, char: str) -> None:
    """A long string holding any character json escapes is written as json.dumps writes it."""
    text = base * LONG + char + "b" * 10
    session = Session(id="s", messages=[Message(text=text)], title=char + text)
    assert snapshot.encode(session) == reference(session)
    assert snapshot.decode(snapshot.encode(session)).messages[0].text == text


@pytest.mark.parametrize(
    "text",
    ["\ud800", "x" * LONG + "\udfff", "ü" * LONG + "\ud800\n"],
    ids=["short", "long", "long with an escape"],
)
def test_lone_surrogates_are_refused(text: str) -> None:
    """A lone surrogate in a short or a long string raises SnapshotError, as before."""
    with pytest.raises(SnapshotError, match="cannot encode"):
        snapshot.encode(Session(id="s", messages=[Message(text=text)]))


def test_values_of_unexpected_types_are_written_as_to_json_gives_them() -> None:
    """Fields holding non-str values and Message subclasses encode like json.dumps(to_json)."""

    class Tagged(Message):
        __slots__ = ()

        def to_json(self) -> dict[str, Any]:
            return {**Message.to_json(self), "tag": 1}

    session = Session(id="s", messages=[Tagged(text="t"), Message(role=7, text=None)])  # type: ignore[arg-type]
    session.title = 3.5  # type: ignore[assignment]
    session.mode = True  # type: ignore[assignment]
    session.labels = [("k", "v")]  # type: ignore[assignment]
    session.extra = {1: "one", None: [1, 2]}  # type: ignore[dict-item]
    assert snapshot.encode(session) == reference(session)


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.messages.append(Message(text="x", tool_calls=[ToolCall(args="\ud800")])),
        lambda s: s.extra.update(n=float("nan")),
        lambda s: s.extra.update(bad={(1, 2): 3}),
        lambda s: s.messages.append(Message(parts=[Part(data=None)])),  # type: ignore[arg-type]
        lambda s: s.messages.append(Message(extra={"role": "x"})),
        lambda s: s.messages.append(Message(tool_calls=None)),  # type: ignore[arg-type]
    ],
    ids=["surrogate in args", "nan", "tuple key", "part data None", "extra shadows", "calls None"],
)
def test_unencodable_values_raise_snapshot_error(change: Any) -> None:
    """Whatever json.dumps(to_json) refused raises SnapshotError from encode."""
    session = Session(id="s")
    change(session)
    with pytest.raises((TypeError, ValueError, AttributeError)):
        reference(session)
    with pytest.raises(SnapshotError, match="cannot encode"):
        snapshot.encode(session)


def test_circular_extra_raises_snapshot_error() -> None:
    """A self-referencing extra value raises SnapshotError, as json.dumps refused it."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(SnapshotError, match="Circular"):
        snapshot.encode(Session(id="s", extra={"loop": loop}))


# -- the cache never serves stale bytes ---------------------------------------------------------


def test_changes_inside_frozen_messages_reach_the_next_save(tmp_path: Path) -> None:
    """Mutating a message's lists or extra between saves is saved: nothing per message is cached."""
    long = "z" * LONG
    message = Message(role="assistant", text=long)
    session = Session.new("s")
    session.messages.append(message)
    with SQLiteStore(tmp_path / "s.db") as store:
        store.sessions.save(session)
        message.tool_calls.append(ToolCall("c", "tool", long + "!"))
        message.parts.append(Part("file", "text/plain", b"data"))
        message.extra["later"] = long
        store.sessions.save(session)
        assert store.sessions.load("s") == session
    assert snapshot.encode(session) == reference(session)


def test_equal_strings_share_one_entry_and_new_text_is_escaped() -> None:
    """A second, equal string object hits the cache; a different one is encoded afresh."""
    text = "q" * LONG
    at = datetime(2026, 1, 1, tzinfo=UTC)
    first = snapshot.encode(Session(id="s", title=text, created_at=at))
    entries, _ = snapshot_writer.string_cache_stats()
    copy = "".join(["q" * (LONG - 1), "q"])  # equal value, distinct object
    assert copy is not text
    assert snapshot.encode(Session(id="s", title=copy, created_at=at)) == first
    assert snapshot_writer.string_cache_stats()[0] == entries
    other = Session(id="s", title=text[:-1] + '"')
    assert snapshot.encode(other) == reference(other)


def test_cache_stays_within_its_budget_and_keeps_recent_entries() -> None:
    """The LRU cache evicts the least recently used entries to stay within its byte budget."""
    cache = _StringCache(40_000)
    texts = [f"{i:04d}" + "x" * 2_000 for i in range(40)]
    for text in texts:
        cache.put(text, text.encode())
        assert cache.get(texts[0]) is not None  # touched each time, so never evicted
        assert cache.stats()[1] <= 40_000
    assert cache.get(texts[1]) is None
    assert cache.get(texts[-1]) == texts[-1].encode()


def _mixed_ascii(i: int) -> str:
    return f"{i:06d}" + "m" * (STRING_CACHE_MIN_CHARS + i % 700)


def _smallest(i: int) -> str:
    return f"{i:06d}" + "s" * (STRING_CACHE_MIN_CHARS - 6)


def _non_ascii(i: int) -> str:
    return f"{i:06d}" + "é€" * (STRING_CACHE_MIN_CHARS // 2 + i % 300)


@pytest.mark.parametrize("make", [_mixed_ascii, _smallest, _non_ascii])
def test_cache_memory_really_stays_within_its_budget(make: Callable[[int], str]) -> None:
    """Measured with tracemalloc, a full cache holds no more memory than its budget.

    The keys are kept alive only by the cache, as the texts of a saved and then
    dropped session would be, so their memory counts against the budget too.
    Each key is also bound to SQL after it is cached, which makes CPython keep
    its UTF-8 form with it (the key grows while in the cache).
    """
    budget = 2 * 1024 * 1024
    conn = apsw.Connection(":memory:")
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = _StringCache(budget)
        for i in range(20_000):
            text = make(i)
            cache.put(text, json.dumps(text, ensure_ascii=False).encode())
            conn.execute("SELECT length(?)", (text,)).fetchall()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        conn.close()
    entries, accounted = cache.stats()
    assert entries > 300  # the cache was filled and evicted many times over
    assert accounted <= budget
    assert held <= budget * 1.05, f"{held} bytes held for a {budget}-byte budget"


def test_a_string_larger_than_a_quarter_of_the_budget_is_not_cached() -> None:
    """One huge string is encoded but not kept, so it cannot flush the rest of the cache."""
    cache = _StringCache(40_000)
    cache.put("small" * 100, b"x")
    cache.put("h" * 20_000, b"y" * 20_000)
    assert cache.get("h" * 20_000) is None
    assert cache.stats()[0] == 1


def test_concurrent_saves_with_a_thrashing_cache_write_correct_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Threads encoding different sessions through a tiny cache each get their exact bytes."""
    monkeypatch.setattr(snapshot_writer, "_cache", _StringCache(8 * LONG * 4))
    sessions_ = [
        Session(id=f"s{n}", messages=[Message(text=f"{n}:{i}:" + "w" * LONG) for i in range(20)])
        for n in range(4)
    ]
    expected = [reference(s) for s in sessions_]
    failures: list[int] = []

    def work(n: int) -> None:
        for _ in range(30):
            if snapshot.encode(sessions_[n]) != expected[n]:
                failures.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert snapshot_writer.string_cache_stats()[1] <= 8 * LONG * 4


def _encode_in_child(result: Any) -> None:
    """Encode a session with long strings in a forked child and report success."""
    session = Session(id="s", messages=[Message(text="f" * LONG)])
    result.put(snapshot.encode(session) == reference(session))


def test_a_forked_child_can_encode_while_a_parent_thread_holds_the_cache_lock() -> None:
    """The cache starts afresh in a forked child, so a lock held at fork cannot hang it."""
    ctx = multiprocessing.get_context("fork")
    result = ctx.Queue()
    cache = snapshot_writer._cache
    with cache._lock:  # as if another thread were inside the cache when fork happens
        child = ctx.Process(target=_encode_in_child, args=(result,))
        child.start()
    child.join(timeout=20)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the forked child hung on the cache lock")
    assert child.exitcode == 0
    assert result.get(timeout=5) is True
