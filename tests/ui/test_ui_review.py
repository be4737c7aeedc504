"""Hostile requests to the viewer found in review: each must get a clear 4xx, never a 500,
and the token redirect must never leave the viewer's origin."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from sqlstore import Event, Message, Session, SQLiteStore, ToolCall, ToolCallRecord, ToolResult
from sqlstore.ui.app import create_app
from sqlstore.ui.security import GuardConfig
from tests.ui import demo_store
from tests.ui.conftest import WAIT_S, make_viewer, raw_head, start_server

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "review-token-0123456789"


def client_for(path: Path, *, token: str | None = None) -> TestClient:
    """Return a client of a guarded viewer app over the store file at ``path`` (no re-raise)."""
    viewer = make_viewer(path)
    app = create_app(viewer, GuardConfig(host="127.0.0.1", port=PORT, token=token))  # type: ignore[arg-type]
    return TestClient(app, base_url=BASE, follow_redirects=False, raise_server_exceptions=False)


@pytest.fixture
def client(demo_db: Path) -> Iterator[TestClient]:
    """A client of the viewer over the demo store."""
    with client_for(demo_db) as c:
        yield c


@pytest.mark.parametrize(
    "query",
    [
        "before=9999-12-31",  # the day after is not a date
        "after=9999-12-31T23:59:59Z",
        "after=2262-04-12",  # past the last nanosecond an int64 holds
        "before=1677-09-20",
        "before=0001-01-01",
    ],
)
def test_dates_outside_the_stored_range_are_a_400(client: TestClient, query: str) -> None:
    """A modified before/after filter outside the times sqlstore stores is a 400 page naming it."""
    response = client.get(f"/?{query}")
    assert response.status_code == 400, response.text[:300]
    assert "Bad request" in response.text


def test_dates_at_the_edges_of_the_range_still_filter(client: TestClient) -> None:
    """Dates well inside the stored range keep working (every demo session is before 2262)."""
    everything = client.get("/?before=2262-04-10")
    nothing = client.get("/?after=2262-04-10")
    assert everything.status_code == nothing.status_code == 200
    assert '<span id="matching">0</span>' in nothing.text
    assert '<span id="matching">0</span>' not in everything.text


@pytest.mark.parametrize("start", ["%C2%B2", "9" * 5000])
def test_message_number_must_be_plain_digits(client: TestClient, start: str) -> None:
    """``from=`` with a superscript digit (``isdigit`` but no ``int``) or 5,000 digits is a 400."""
    response = client.get(f"/session?id={demo_store.PARENT_ID}&from={start}")
    assert response.status_code == 400, response.text[:300]
    assert "from= takes a message number" in response.text


def test_token_redirect_stays_on_this_origin(demo_db: Path) -> None:
    """``GET //other.host/x?token=T`` on a real server redirects within the viewer, not off it."""
    served = start_server(demo_db, "--token", TOKEN)
    try:
        host, port = served.url.removeprefix("http://").split(":")
        for path in ("//evil.example/x", "///evil.example/x", "/\\evil.example/x"):
            conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
            try:
                conn.request("GET", f"{path}?token={TOKEN}&a=1")
                response = conn.getresponse()
                location = response.getheader("location") or ""
            finally:
                conn.close()
            assert response.status == 303, path
            assert location.startswith("/") and not location.startswith("//"), location
            assert "\\" not in location and location.endswith("?a=1"), location
    finally:
        served.stop()


def test_timeline_page_of_huge_records_stays_small(tmp_path: Path) -> None:
    """Ten 1 MiB records make a timeline page (and live frames) of bounded size, marked as cut."""
    path = tmp_path / "huge.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("huge"))
        big = "x" * (1024 * 1024)
        store.events.append_events("huge", [Event(type="tool.output", text=big) for _ in range(10)])
    with client_for(path) as c:
        response = c.get("/timeline?id=huge")
    assert response.status_code == 200
    assert len(response.content) < 2 * 1024 * 1024, len(response.content)
    assert "more characters" in response.text


def test_tools_page_of_a_long_audit_trail_reads_only_what_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session with 3,000 tool calls: its tools page decodes about 500 rows, not all of them."""
    from sqlstore.sqlite import rows

    path = tmp_path / "audit.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("busy"))
        calls = [
            ToolCallRecord(session_id="busy", call_id=f"c{n}", tool="t", args="{}", result=f"r{n}")
            for n in range(3_000)
        ]
        store.apply("busy", audit=calls)
    decoded = 0
    real = rows.audit_from_row

    def counting(row: Any) -> ToolCallRecord:
        nonlocal decoded
        decoded += 1
        return real(row)

    monkeypatch.setattr(rows, "audit_from_row", counting)
    with client_for(path) as c:
        page = c.get("/tools?id=busy")
    assert page.status_code == 200
    assert "r2999" in page.text and ">r2499<" not in page.text  # the newest 500 are shown
    assert "Showing the newest 500 calls." in page.text
    assert decoded <= 501, decoded


def raw_status(port: int, request: bytes) -> int:
    """Send one raw HTTP request to the server on ``port``; return the response status."""
    return int(raw_head(port, request).split(b" ", 2)[1])


def test_host_and_token_checks_on_a_real_server(demo_db: Path) -> None:
    """Rebinding look-alike hosts and a missing Host are 421; the token guards static and stream."""
    served = start_server(demo_db, "--token", TOKEN)
    port = int(served.url.rsplit(":", 1)[1])
    ok = f"127.0.0.1:{port}".encode()
    bearer = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
    try:
        for host in (
            f"127.0.0.1.evil.com:{port}",
            f"localhost.:{port}",
            "127.0.0.1",
            f"[::2]:{port}",
        ):
            request = f"GET / HTTP/1.1\r\nHost: {host}\r\n".encode() + bearer + b"\r\n"
            assert raw_status(port, request) == 421, host
        assert raw_status(port, b"GET / HTTP/1.0\r\n" + bearer + b"\r\n") == 421  # no Host
        for name in (f"[::1]:{port}", f"LOCALHOST:{port}"):
            request = f"GET /static/app.css HTTP/1.1\r\nHost: {name}\r\n".encode() + bearer
            assert raw_status(port, request + b"\r\n") == 200, name
        for path in (b"/static/app.css", b"/stream?id=run-live-0001", b"/nowhere"):
            assert (
                raw_status(port, b"GET " + path + b" HTTP/1.1\r\nHost: " + ok + b"\r\n\r\n") == 401
            )
        cookie = b"Cookie: sqlstore_token=\xff\xfe" + TOKEN.encode()[2:] + b"\r\n"
        assert (
            raw_status(port, b"GET / HTTP/1.1\r\nHost: " + ok + b"\r\n" + cookie + b"\r\n") == 401
        )
        for path in (
            b"/static/../context.py",
            b"/static/%2e%2e/context.py",
            b"/static/..%2fapp.py",
        ):
            request = b"GET " + path + b" HTTP/1.1\r\nHost: " + ok + b"\r\n" + bearer + b"\r\n"
            assert raw_status(port, request) == 404, path
    finally:
        status, err = served.stop()
    assert status == 0
    assert TOKEN not in err  # the token is never logged


def test_session_and_tools_pages_of_huge_texts_stay_small(tmp_path: Path) -> None:
    """Messages, tool results and audit rows of 1 MiB each make pages of bounded size."""
    path = tmp_path / "texts.db"
    big = "y" * (1024 * 1024)
    session = Session.new("texts")
    session.record_user_prompt(big)
    session.begin_turn()
    session.record_assistant(
        Message(
            role="assistant",
            text=big,
            reasoning=big,
            tool_calls=[ToolCall(id="c1", name="t", args=json.dumps({"a": big}))],
        )
    )
    session.record_tool_results([ToolResult(call_id="c1", content=big)])
    with SQLiteStore(path) as store:
        store.sessions.save(session)
        store.apply(
            "texts",
            audit=[
                ToolCallRecord(session_id="texts", call_id=f"c{n}", tool="t", args=big, result=big)
                for n in range(3)
            ],
        )
    with client_for(path) as c:
        for page in ("/session?id=texts", "/tools?id=texts", "/tools?tool=t"):
            response = c.get(page)
            assert response.status_code == 200, page
            assert len(response.content) < 2 * 1024 * 1024, (page, len(response.content))
            assert "more characters" in response.text, page
