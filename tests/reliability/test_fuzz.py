"""Fuzzing with hypothesis: hostile input reaches only documented errors.

Cursor strings (on MemoryStore and SQLiteStore alike), snapshot bytes, CLI
durations, session ids, run-log bytes and mecatl JSON/JSONL items are generated
at random — arbitrary bytes and text, and near-valid documents with one part
replaced. Each call must succeed or raise one of the errors its docstring
documents; anything else (``KeyError``, ``UnicodeDecodeError``, ...) is a bug.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import cli
from retention import (
    Policy,
    PolicyError,
    Rule,
    format_duration,
    load_config,
    parse_duration,
    plan_rows,
)
from retention.policy import config_from_mapping
from sqlstore import Event, MemoryStore, Session, SQLiteStore, runlog, snapshot
from sqlstore.cursor import encode_cursor
from sqlstore.errors import (
    CursorExpired,
    CursorMalformed,
    InvalidEvent,
    InvalidSessionId,
    SnapshotError,
)
from sqlstore.migrate.items import Fingerprint, ItemBytes, ItemFailed, ItemSkipped, SourceItem
from sqlstore.migrate.mecatl_events import (
    EVENT_VERSION,
    GAP_VERSION,
    GENERATION_VERSION,
    audit_from_mecatl,
    event_from_mecatl,
)
from sqlstore.migrate.mecatl_mapping import MappingError, session_from_snapshot
from sqlstore.migrate.mecatl_source import ENVELOPE_VERSION, import_mecatl
from sqlstore.migrate.runlog_source import import_runlog

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

FUZZ_BIG = settings(FUZZ, max_examples=80)
"""For the strategies that build whole files (slow to generate)."""

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# -- cursors ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryStore, SQLiteStore]]:
    """A MemoryStore and a SQLiteStore holding the same three-record log of session "s"."""
    mem = MemoryStore()
    sql = SQLiteStore(tmp_path_factory.mktemp("fuzz") / "fuzz.db", durability="normal")
    for store in (mem, sql):
        store.events.append_event("s", Event("a"))
        store.events.append_gap("s", "lost")
        store.events.append_event("s", Event("b"))
    yield mem, sql
    mem.close()
    sql.close()


CURSOR_FIELD = st.one_of(st.text(max_size=12), JSON_VALUES)
CURSOR_DOCS = st.dictionaries(
    st.sampled_from(["v", "s", "g", "p", "x"]), CURSOR_FIELD, max_size=5
) | st.fixed_dictionaries(
    {
        "v": st.sampled_from(["cur/1", "cur/2", ""]),
        "s": st.sampled_from(["s", "t", "s\x00"]),
        "g": st.text(alphabet="0123456789abcdef", min_size=0, max_size=17),
        "p": st.one_of(st.integers(-5, 10).map(str), st.sampled_from(["01", "1e3", " 1", "+1"])),
    }
)
CURSORS = st.one_of(
    st.text(max_size=80),
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=", max_size=120
    ),
    st.binary(max_size=80).map(_b64),
    CURSOR_DOCS.map(lambda d: _b64(json.dumps(d).encode())),
    JSON_VALUES.map(lambda v: _b64(json.dumps(v).encode())),
)


def _read_outcome(store: Any, cursor: str) -> Any:
    try:
        return [(r.kind, r.gap_reason, r.event) for r in store.events.read_after("s", cursor)]
    except (CursorMalformed, CursorExpired) as exc:
        return type(exc)


@FUZZ
@given(cursor=CURSORS)
def test_fuzzed_cursors_give_only_cursor_errors(
    stores: tuple[MemoryStore, SQLiteStore], cursor: str
) -> None:
    """Any cursor yields records or CursorMalformed/CursorExpired, the same on both stores."""
    mem, sql = stores
    outcome = _read_outcome(mem, cursor)
    assert outcome == _read_outcome(sql, cursor)


@FUZZ
@given(position=st.integers(min_value=0, max_value=10), flip=st.integers(min_value=0))
def test_fuzzed_positions_and_flipped_characters(
    stores: tuple[MemoryStore, SQLiteStore], position: int, flip: int
) -> None:
    """A real cursor with another position, or with one character changed, is handled cleanly."""
    for store in stores:
        generation = json.loads(
            base64.urlsafe_b64decode(next(iter(store.events.read_after("s"))).cursor + "==")
        )["g"]
        cursor = encode_cursor("s", generation, position)
        outcome = _read_outcome(store, cursor)
        if position <= 3:
            assert isinstance(outcome, list) and len(outcome) == 3 - position
        else:
            assert outcome is CursorMalformed
        index = flip % len(cursor)
        mutated = cursor[:index] + ("A" if cursor[index] != "A" else "B") + cursor[index + 1 :]
        _read_outcome(store, mutated)


# -- snapshots --------------------------------------------------------------------------------

VALID_SNAPSHOT = snapshot.to_json(Session.new("snap", title="t", labels={"k": "v"}))


def _decode_ok_or_snapshot_error(data: bytes) -> None:
    try:
        session = snapshot.decode(data)
    except SnapshotError:
        return
    assert snapshot.decode(snapshot.encode(session)) == session


@FUZZ
@given(data=st.binary(max_size=300))
def test_fuzzed_snapshot_bytes_give_snapshot_error(data: bytes) -> None:
    """Arbitrary bytes decode to a session or raise SnapshotError."""
    _decode_ok_or_snapshot_error(data)


@FUZZ
@given(
    key=st.sampled_from(sorted(VALID_SNAPSHOT)),
    value=JSON_VALUES,
    drop=st.booleans(),
)
def test_fuzzed_snapshot_fields_give_snapshot_error(key: str, value: Any, drop: bool) -> None:
    """A valid snapshot with one field replaced or removed decodes or raises SnapshotError."""
    doc = dict(VALID_SNAPSHOT)
    if drop:
        del doc[key]
    else:
        doc[key] = value
    _decode_ok_or_snapshot_error(json.dumps(doc).encode())


# -- durations and session ids ------------------------------------------------------------------

DURATION_TEXT = st.one_of(
    st.text(max_size=20),
    st.text(alphabet="0123456789wdhms ", max_size=20),
    st.lists(
        st.tuples(st.integers(0, 10**20), st.sampled_from("wdhmsy")), min_size=1, max_size=4
    ).map(lambda parts: "".join(f"{n}{u}" for n, u in parts)),
)


@FUZZ
@given(text=DURATION_TEXT)
def test_fuzzed_durations_give_policy_error(text: str) -> None:
    """A duration parses to a non-negative timedelta that round-trips, or raises PolicyError."""
    try:
        value = parse_duration(text)
    except PolicyError as exc:
        assert exc.hint
        return
    assert value >= timedelta(0)
    assert parse_duration(format_duration(value)) == value


@FUZZ
@given(sid=st.text(max_size=30) | st.binary(max_size=30).map(lambda b: b.decode("latin-1")))
def test_fuzzed_session_ids_round_trip_or_are_refused(
    stores: tuple[MemoryStore, SQLiteStore], sid: str
) -> None:
    """A random id is refused (InvalidSessionId/SnapshotError) or round-trips, on both stores."""
    for store in stores:
        try:
            store.sessions.save(Session(id=sid))
        except (InvalidSessionId, SnapshotError):
            with pytest.raises(InvalidSessionId):
                store.sessions.load(sid)
            continue
        assert store.sessions.load(sid).id == sid
        store.sessions.delete(sid)


# -- run logs ---------------------------------------------------------------------------------

RUNLOG_RECORD = st.fixed_dictionaries(
    {"kind": st.sampled_from(["meta", "message", "event", "result", "reset", "other", 3])},
    optional={
        "at": st.one_of(st.text(max_size=25), st.just("2026-01-02T03:04:05Z"), JSON_VALUES),
        "meta": st.one_of(JSON_VALUES, st.fixed_dictionaries({"id": st.just("run")})),
        "message": JSON_VALUES,
        "event": JSON_VALUES,
        "result": JSON_VALUES,
    },
)


def _item(files: list[tuple[str, bytes]], name: str) -> ItemBytes:
    paths = tuple(Path("/src") / f for f, _ in files)
    contents = {Path("/src") / f: body for f, body in files if body is not None}
    digest = hashlib.sha256(b"".join(contents.values())).hexdigest()
    size = sum(len(b) for b in contents.values())
    return ItemBytes(
        item=SourceItem(name, paths),
        contents=contents,
        mtimes_ns=dict.fromkeys(contents, 1_700_000_000_000_000_000),
        fingerprint=Fingerprint(size, 1_700_000_000_000_000_000, digest),
    )


def _jsonl(values: list[Any], torn: bytes) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in values) + torn


@FUZZ
@given(data=st.binary(max_size=400))
def test_fuzzed_run_log_bytes_never_raise(data: bytes) -> None:
    """runlog.decode reads any bytes without raising and reports what it skipped."""
    log = runlog.decode(data, run_id="run")
    assert log.id == "run"


@FUZZ_BIG
@given(
    records=st.lists(RUNLOG_RECORD, max_size=8),
    torn=st.binary(max_size=10),
    lead_meta=st.booleans(),
)
def test_fuzzed_run_logs_import_or_skip(records: list[Any], torn: bytes, lead_meta: bool) -> None:
    """A fuzzed run log imports (with warnings) or is skipped; never a raw error."""
    if lead_meta:
        records = [{"kind": "meta", "at": "2026-01-02T03:04:05Z", "meta": {"id": "run"}}, *records]
    item = _item([("run.jsonl", _jsonl(records, torn))], "run.jsonl")
    try:
        imported = import_runlog(item)
    except ItemSkipped:
        return
    assert imported.session.id == "run"


# -- mecatl ------------------------------------------------------------------------------------

MECATL_EVENT = st.fixed_dictionaries(
    {},
    optional={
        "Type": st.one_of(st.sampled_from(["message", "tool_call", "result", ""]), JSON_VALUES),
        "Seq": JSON_VALUES,
        "Turn": JSON_VALUES,
        "Text": JSON_VALUES,
        "RunID": JSON_VALUES,
        "Actor": JSON_VALUES,
        "ToolCall": JSON_VALUES,
        "ToolResult": JSON_VALUES,
        "Ask": JSON_VALUES,
        "Result": JSON_VALUES,
        "UserPrompt": JSON_VALUES,
    },
)
MECATL_TOOL = st.fixed_dictionaries(
    {"type": st.sampled_from(["tool_call", "other"])},
    optional={
        "time": st.one_of(st.text(max_size=25), st.just("2026-01-02T03:04:05.123Z"), JSON_VALUES),
        "call_id": JSON_VALUES,
        "tool": JSON_VALUES,
        "args": JSON_VALUES,
        "result": JSON_VALUES,
        "is_error": JSON_VALUES,
        "queued_micros": JSON_VALUES,
        "took_micros": JSON_VALUES,
    },
)
MECATL_SNAPSHOT = st.fixed_dictionaries(
    {"id": st.one_of(st.just("m1"), JSON_VALUES)},
    optional={
        "state": st.one_of(st.sampled_from(["idle", "completed", "bogus", ""]), JSON_VALUES),
        "created_at": st.one_of(st.just("2026-01-02T03:04:05Z"), st.text(max_size=25)),
        "messages": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["user", "assistant", "tool", 1])},
                    optional={
                        "content": JSON_VALUES,
                        "parts": JSON_VALUES,
                        "tool_calls": JSON_VALUES,
                    },
                ),
                max_size=3,
            ),
            JSON_VALUES,
        ),
        "kind": JSON_VALUES,
        "relationship": JSON_VALUES,
        "owner": JSON_VALUES,
        "usage": JSON_VALUES,
        "limits": JSON_VALUES,
        "title": JSON_VALUES,
    },
)


@FUZZ
@given(raw=MECATL_EVENT | JSON_VALUES)
def test_fuzzed_mecatl_events_give_mapping_error(raw: Any) -> None:
    """A mecatl event object maps to an Event or raises MappingError."""
    try:
        event = event_from_mecatl(raw)
    except MappingError:
        return
    assert event.type


@FUZZ
@given(raw=MECATL_TOOL | JSON_VALUES)
def test_fuzzed_mecatl_audit_lines_give_mapping_error(raw: Any) -> None:
    """A mecatl tools line maps to a ToolCallRecord or raises MappingError."""
    try:
        record = audit_from_mecatl(raw, "m1")
    except MappingError:
        return
    assert record.session_id == "m1"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "parts": True},
        {"role": "user", "parts": [None]},
        {"role": "user", "content": None, "tool_calls": 1},
    ],
)
def test_malformed_mecatl_messages_give_mapping_error(message: dict[str, Any]) -> None:
    """A mecatl snapshot whose message has the wrong shape raises MappingError."""
    raw = {"id": "m1", "created_at": "2026-01-02T03:04:05Z", "messages": [message]}
    with pytest.raises(MappingError):
        session_from_snapshot(raw)


@FUZZ
@given(raw=MECATL_SNAPSHOT | JSON_VALUES)
def test_fuzzed_mecatl_snapshots_give_mapping_error(raw: Any) -> None:
    """A mecatl snapshot maps to a valid Session or raises MappingError."""
    try:
        session = session_from_snapshot(raw)
    except MappingError:
        return
    assert snapshot.decode(snapshot.encode(session)) == session


@FUZZ_BIG
@given(
    envelope=st.one_of(
        st.fixed_dictionaries(
            {
                "v": st.sampled_from([ENVELOPE_VERSION, "other"]),
                "modified_at": st.one_of(st.just("2026-01-02T03:04:05Z"), st.text(max_size=20)),
                "snapshot": MECATL_SNAPSHOT,
            }
        ),
        JSON_VALUES,
    ),
    events=st.lists(
        st.one_of(
            st.fixed_dictionaries({"v": st.just(EVENT_VERSION), "ev": MECATL_EVENT}),
            st.fixed_dictionaries({"v": st.just(GAP_VERSION), "r": JSON_VALUES}),
            JSON_VALUES,
        ),
        max_size=6,
    ),
    header=st.one_of(
        st.fixed_dictionaries({"v": st.just(GENERATION_VERSION), "g": JSON_VALUES}), JSON_VALUES
    ),
    tools=st.lists(MECATL_TOOL | JSON_VALUES, max_size=4),
    torn=st.binary(max_size=8),
    garbage=st.binary(max_size=40),
    use_garbage=st.booleans(),
)
def test_fuzzed_mecatl_items_import_skip_or_fail_cleanly(
    envelope: Any,
    events: list[Any],
    header: Any,
    tools: list[Any],
    torn: bytes,
    garbage: bytes,
    use_garbage: bool,
) -> None:
    """A fuzzed sid-v2 family imports, or raises ItemSkipped/ItemFailed; never a raw error."""
    snap = garbage if use_garbage else json.dumps(envelope).encode()
    item = _item(
        [
            ("sid-v2/m1.session.json", snap),
            ("sid-v2/m1.events.jsonl", _jsonl([header, *events], torn)),
            ("sid-v2/m1.tools.jsonl", _jsonl(tools, torn)),
        ],
        "sid-v2/m1",
    )
    try:
        imported = import_mecatl(item)
    except (ItemSkipped, ItemFailed):
        return
    assert snapshot.decode(snapshot.encode(imported.session)) == imported.session
    for entry in imported.log:
        assert entry.event is None or entry.event.type


# -- the CLI's duration options ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small store for CLI fuzzing."""
    path = tmp_path_factory.mktemp("cli") / "cli.db"
    with SQLiteStore(path) as store:
        store.sessions.create(Session.new("a"))
    return path


def test_huge_prune_duration_is_handled(cli_db: Path) -> None:
    """prune --older-than with a duration longer than recorded time deletes nothing, cleanly."""
    args = ["--db", str(cli_db), "prune", "--dry-run", "--older-than", "105708w"]
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 2)


def test_huge_max_age_plans_nothing() -> None:
    """A policy whose max_age reaches before year 1 plans no deletion instead of overflowing."""
    meta = MemoryStore()
    meta.sessions.save(Session.new("a"))
    policy = Policy(main=Rule(max_age=timedelta(weeks=105708)), acknowledge_main_deletion=True)
    plan = plan_rows(meta.sessions.iter_meta(), policy, datetime.now(UTC))
    assert plan.entries == []


@settings(FUZZ, max_examples=60)
@given(
    text=DURATION_TEXT,
    command=st.sampled_from(
        [["ls", "--older-than"], ["ls", "--newer-than"], ["prune", "--dry-run", "--older-than"]]
    ),
)
def test_fuzzed_cli_durations_give_usage_errors(
    cli_db: Path, text: str, command: list[str]
) -> None:
    """A duration option given any text runs, or exits 2 with a usage error; never a traceback."""
    result = CliRunner().invoke(cli, ["--db", str(cli_db), *command, text], catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.stderr)
    if result.exit_code == 2:
        assert "Error: " in result.stderr


CLI_IDS = st.one_of(
    st.sampled_from(["a", "missing", "-x", "--", "a\x00b", ""]),
    st.text(max_size=20).filter(lambda t: not t.startswith("-")),
)


@settings(FUZZ, max_examples=80)
@given(sid=CLI_IDS, cursor=CURSORS, command=st.sampled_from(["events", "show", "audit"]))
def test_fuzzed_cli_ids_and_cursors_never_trace_back(
    cli_db: Path, sid: str, cursor: str, command: str
) -> None:
    """show/audit/events with any id (and events with any --after) exit 0, 1 or 2 cleanly."""
    args = ["--db", str(cli_db), command, "--", sid]
    if command == "events":
        args = ["--db", str(cli_db), command, "--after", cursor, "--", sid]
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code == 1:
        assert result.stderr.startswith("Error: ") and "Hint: " in result.stderr, result.stderr


# -- retention policy files -------------------------------------------------------------------

TOML_SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=12),
    DURATION_TEXT,
)
RULE_TABLES = st.dictionaries(
    st.sampled_from(["max_age", "max_count", "other"]), TOML_SCALARS, max_size=3
)
POLICY_KEYS = ["version", "acknowledge_main_deletion", "sweep_every", "main", "scheduled", "child"]
POLICY_MAPPINGS = st.fixed_dictionaries(
    {
        "retention": st.dictionaries(
            st.sampled_from(
                [
                    "version",
                    "acknowledge_main_deletion",
                    "sweep_every",
                    "main",
                    "scheduled",
                    "child",
                ]
            ),
            st.one_of(TOML_SCALARS, RULE_TABLES),
            max_size=6,
        )
    }
) | st.dictionaries(st.text(max_size=8), st.one_of(TOML_SCALARS, RULE_TABLES), max_size=2)


@FUZZ
@given(data=POLICY_MAPPINGS)
def test_fuzzed_policy_tables_give_policy_error(data: dict[str, Any]) -> None:
    """A parsed policy file of any shape gives a RetentionConfig or PolicyError (with a hint)."""
    try:
        config = config_from_mapping(data)
    except PolicyError as exc:
        assert str(exc)
        return
    assert config.sweep_every > timedelta(0)


def test_non_utf8_policy_file_gives_policy_error(tmp_path: Path) -> None:
    """A policy file that is not UTF-8 is reported as PolicyError."""
    path = tmp_path / "policy.toml"
    path.write_bytes(b"[retention]\nversion = 1\n\xff\xfe")
    with pytest.raises(PolicyError):
        load_config(path)


@FUZZ
@given(data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzzed_policy_files_give_policy_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    """Any bytes as a policy file give a RetentionConfig or PolicyError."""
    path = tmp_path_factory.mktemp("policy") / "policy.toml"
    path.write_bytes(data)
    try:
        load_config(path)
    except PolicyError:
        return


@FUZZ
@given(
    text=st.text(
        alphabet=st.characters(categories=["Nd", "No", "Nl"]) | st.sampled_from("wdhms"),
        min_size=1,
        max_size=12,
    ).filter(lambda t: not t.isascii())
)
def test_fuzzed_non_ascii_durations_are_refused(text: str) -> None:
    """A duration with any non-ASCII character (digits of any script included) is refused."""
    with pytest.raises(PolicyError):
        parse_duration(text)


@FUZZ
@given(depth=st.integers(1, 5_000), wrap=st.sampled_from(["list", "dict"]))
def test_fuzzed_nesting_depth_is_stored_or_invalid_event(depth: int, wrap: str) -> None:
    """Event data nested to any depth is stored and read back, or refused as InvalidEvent."""
    value: Any = 0
    for _ in range(depth):
        value = [value] if wrap == "list" else {"k": value}
    with MemoryStore() as store:
        try:
            store.events.append_event("s", Event(type="deep", data={"v": value}))
        except InvalidEvent:
            assert list(store.events.read("s")) == []
            return
        (event,) = store.events.read("s")
        assert event.data == {"v": value}
