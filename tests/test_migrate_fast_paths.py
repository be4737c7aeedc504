"""The fast paths behind ``sqlstore migrate`` give the same results as the plain ones.

Covers the JSONL line decoder (same values and errors as ``json.loads``), the
canonical RFC 3339 parser (same datetimes and errors as the regex path), the
bulk log and audit inserts of the SQLite import (same rows as one
``append_record`` / ``insert_audit`` per record) and the one-query collision check.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstore import SQLiteStore, clock
from sqlstore.audit import ToolCallRecord
from sqlstore.events import Event, encode_event
from sqlstore.jsonl import loads_line, parse_jsonl
from sqlstore.migrate import run_migration
from sqlstore.sqlite import rows

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

EDGE_LINES = [
    b"{}",
    b'{"a":[1,2.5,null,true,"\xc3\xa9"]}',
    b' {"a":1} ',
    b'{"a":1}\r',
    b"\t[1]\t",
    b"1\x00",
    b'"\x00"',
    b"\xef\xbb\xbf{}",
    b"\xff{}",
    b"[1",
    b"1 2",
    b'{"a":1},{"b":2}',
    b"NaN",
    b"-Infinity",
    b"\x0c{}",
    b"{}\x0c",
    b'"\\ud800"',
    b"[" * 100_000 + b"]" * 100_000,
]


def _outcome(fn: Any, raw: bytes) -> tuple[str, Any]:
    try:
        return "value", json.dumps(fn(raw), sort_keys=True)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("raw", EDGE_LINES, ids=range(len(EDGE_LINES)))
def test_loads_line_matches_json_loads_on_edge_lines(raw: bytes) -> None:
    """Every edge line decodes to json.loads's value, or fails with its exact error."""
    assert _outcome(loads_line, raw) == _outcome(json.loads, raw)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, before=st.sampled_from(["", " ", "\t", "\r"]), after=st.text(" \t\r"))
def test_loads_line_matches_json_loads_on_any_value(value: Any, before: str, after: str) -> None:
    """Any JSON value, padded with JSON whitespace, decodes as json.loads decodes it."""
    raw = (before + json.dumps(value, ensure_ascii=False) + after).encode("utf-8", "surrogatepass")
    assert _outcome(loads_line, raw) == _outcome(json.loads, raw)


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=40).filter(lambda b: b"\n" not in b))
def test_loads_line_matches_json_loads_on_any_bytes(raw: bytes) -> None:
    """Arbitrary bytes give json.loads's value or its exact error."""
    assert _outcome(loads_line, raw) == _outcome(json.loads, raw)


def test_parse_jsonl_reports_the_same_problems_as_before() -> None:
    """Malformed, blank and torn lines are handled as the format document says."""
    data = b'{"a":1}\n\n  \nnot json\n{"b":2}\r\n{"torn":'
    parsed = parse_jsonl(data, "f.jsonl")
    assert parsed.lines == [(1, {"a": 1}), (5, {"b": 2})]
    assert [(p.line, p.reason.split(":")[0]) for p in parsed.problems] == [
        (4, "malformed line skipped"),
        (6, "torn final line (no trailing newline) ignored"),
    ]
    assert parsed.torn


MOMENTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


@settings(max_examples=300, deadline=None)
@given(moment=MOMENTS)
def test_canonical_timestamps_parse_like_the_regex_path(moment: datetime) -> None:
    """A format_rfc3339 text parses to the same UTC datetime as its lower-case-z twin."""
    text = clock.format_rfc3339(moment)
    fast = clock.parse_rfc3339(text)
    slow = clock.parse_rfc3339(text[:-1] + "z")  # not the canonical shape: the regex path
    assert fast == slow == moment
    assert fast.tzinfo is UTC and slow.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01T00:00:00.000000Z",
        "2026-02-30T00:00:00.000000Z",
        "2026-11-01T24:00:00.000000Z",
        "2026-11-01T23:59:60.000000Z",
        "0000-11-01T00:00:00.000000Z",
        "2026-W44-7T00:00:00.000000Z",
        "2026-11-01T00:00:00.00000xZ",
        "2026-11-01T00:00:00,000000Z",
        "2026-11-01T00:00:00.000000+",
    ],
)
def test_canonically_shaped_bad_timestamps_are_still_refused(text: str) -> None:
    """A text of the canonical length that is not a valid timestamp raises ValueError."""
    with pytest.raises(ValueError):
        clock.parse_rfc3339(text)


def test_non_ascii_digits_keep_the_regex_path_result() -> None:
    """Digits the regex accepts but fromisoformat does not still parse as before."""
    text = "\uff12\uff10\uff12\uff16-11-01T00:00:00.000000Z"  # fullwidth 2026
    assert clock.parse_rfc3339(text) == datetime(2026, 11, 1, tzinfo=UTC)


RECORDS = [
    (False, "tool", encode_event(Event("tool", text="ls"))),
    (True, "", b"lost 3 events"),
    (False, "result", encode_event(Event("result"))),
]


def _log_rows(conn: apsw.Connection, sid: str) -> tuple[list[Any], list[Any]]:
    """Every column of the log head (but the generation) and of the records of ``sid``."""

    def rows_of(table: str, order: str) -> list[dict[str, Any]]:
        names = [n for (n,) in conn.execute("SELECT name FROM pragma_table_info(?)", (table,))]
        found = conn.execute(
            f"SELECT * FROM {table} WHERE session_id = ? ORDER BY {order}", (sid,)
        ).fetchall()
        return [
            {k: v for k, v in zip(names, row, strict=True) if k not in ("session_id", "generation")}
            for row in found
        ]

    return rows_of("event_logs", "session_id"), rows_of("events", "pos")


def test_insert_log_leaves_the_rows_of_one_append_per_record(tmp_path: Path) -> None:
    """insert_log writes the log head and events append_record would (every column), at once."""
    with SQLiteStore(tmp_path / "s.db") as store:

        def op(conn: apsw.Connection) -> str:
            for is_gap, event_type, body in RECORDS:
                rows.append_record(
                    conn, "one-by-one", is_gap=is_gap, event_type=event_type, body=body, now_ns=7
                )
            rows.insert_log(conn, "bulk", "gen-1", RECORDS, 7)
            rows.insert_log(conn, "empty", "gen-2", [], 7)
            return "done"

        store.db.write(op)
        with store.db.reader() as conn:
            assert _log_rows(conn, "bulk") == _log_rows(conn, "one-by-one")
            assert _log_rows(conn, "bulk")[1] != []
            assert _log_rows(conn, "empty") == ([], [])
            generation = conn.execute(
                "SELECT generation FROM event_logs WHERE session_id = 'bulk'"
            ).fetchone()
        assert generation == ("gen-1",)
        assert [r.event is None for r in store.events.read_after("bulk")] == [False, True, False]


def test_insert_audits_leaves_the_rows_of_one_insert_per_record(tmp_path: Path) -> None:
    """insert_audits writes, in order, the rows insert_audit would write one at a time."""
    records = [
        ToolCallRecord("s", f"c{i}", "bash", "{}", "ok", i % 2 == 1, None, 3, 40 + i, "r")
        for i in range(3)
    ]
    with SQLiteStore(tmp_path / "s.db") as store:

        def op(conn: apsw.Connection) -> None:
            for i, rec in enumerate(records):
                rows.insert_audit(conn, rec, 100 + i)
            rows.insert_audits(conn, [(rec, 100 + i) for i, rec in enumerate(records)])

        store.db.write(op)
        with store.db.reader() as conn:
            found = conn.execute(f"SELECT {rows.AUDIT_COLUMNS} FROM tool_calls ORDER BY seq")
            stored = found.fetchall()
        assert stored[:3] == stored[3:]
        assert [r[1] for r in stored[3:]] == ["c0", "c1", "c2"]


def test_an_id_with_only_audit_rows_counts_as_existing(tmp_path: Path) -> None:
    """Audit rows stored under an id without snapshot or log are never replaced silently."""
    source = tmp_path / "runlogs"
    shutil.copytree(EXAMPLES / "runlogs", source)
    with SQLiteStore(tmp_path / "s.db") as store:
        store.audit.record(ToolCallRecord("20261128-090000", "mine", "bash", "{}", "ok"))
        report = run_migration(store, source)
        assert report.skipped["exists"] == 1
        assert [r.call_id for r in store.audit.list("20261128-090000")] == ["mine"]
        assert report.imported == 3


def test_imported_logs_hold_every_record_in_order(tmp_path: Path) -> None:
    """Each imported session's log length, positions and audit rows match the report."""
    source = tmp_path / "runlogs"
    shutil.copytree(EXAMPLES / "runlogs", source)
    with SQLiteStore(tmp_path / "s.db") as store:
        report = run_migration(store, source, verify=True)
        assert report.verified == report.imported == 4
        with store.db.reader() as conn:
            heads = conn.execute("SELECT session_id, length FROM event_logs").fetchall()
            for sid, length in heads:
                positions = [
                    p
                    for (p,) in conn.execute(
                        "SELECT pos FROM events WHERE session_id = ? ORDER BY pos", (sid,)
                    )
                ]
                assert positions == list(range(1, length + 1))
        assert sum(length for _, length in heads) == report.events
