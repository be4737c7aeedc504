"""The viewer's pages over HTTP (Starlette's TestClient on a real SQLite file): content,
filters, paging, escaping, errors, and the guard (Host, methods, token, headers)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sqlstore import Event, Session, SQLiteStore
from sqlstore.ui.app import create_app
from sqlstore.ui.security import CONTENT_SECURITY_POLICY, GuardConfig
from tests.ui import demo_store
from tests.ui.conftest import file_digests, make_viewer

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"


def client_for(path: Path, *, token: str | None = None) -> TestClient:
    """Return a client of a guarded viewer app over the store file at ``path``."""
    viewer = make_viewer(path)
    app = create_app(viewer, GuardConfig(host="127.0.0.1", port=PORT, token=token))  # type: ignore[arg-type]
    return TestClient(app, base_url=BASE, follow_redirects=False)


@pytest.fixture
def client(demo_db: Path) -> Iterator[TestClient]:
    """A client of the viewer over the demo store."""
    with client_for(demo_db) as c:
        yield c


def ids_on(page: str) -> list[str]:
    """Return the session ids linked from a session list page, in order."""
    return [
        html.unescape(m) for m in re.findall(r'<code class="id">([^<]*)</code></a> <button', page)
    ]


def test_every_page_answers(client: TestClient) -> None:
    """Each page of the viewer renders with 200 and names what it shows."""
    sid = demo_store.PARENT_ID
    for path, needle in [
        ("/", "sessions in the store"),
        (f"/session?id={sid}", "Fix the failing tests"),
        (f"/timeline?id={sid}", "recorder restarted"),
        (f"/tools?id={sid}", "run_tests"),
        ("/tools", "Tool calls by tool"),
        ("/tools?tool=run_tests", "Calls of tool"),
        ("/retention", "Sweep history"),
        ("/store", "Schema version"),
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert needle in response.text, path


def test_session_page_shows_the_run(client: TestClient) -> None:
    """The session page shows lineage, last error, reasoning folded, calls, error results, image."""
    page = client.get(f"/session?id={demo_store.PARENT_ID}").text
    assert f"/session?id={demo_store.CHILD_ID}" in page
    assert 'id="last-error"' in page and "run_tests failed" in page
    assert '<details class="reasoning"><summary>Reasoning</summary>' in page
    assert "Error result for <code>call-2</code>" in page
    assert '<img src="data:image/png;base64,' in page
    child = client.get(f"/session?id={demo_store.CHILD_ID}").text
    assert f'<dt>Parent</dt><dd><a href="/session?id={demo_store.PARENT_ID}"' in child


def test_hostile_payload_is_escaped_everywhere(client: TestClient) -> None:
    """Stored markup comes back as text on every page that shows it, never as a tag."""
    sid = demo_store.HOSTILE_ID
    for path, params in [
        ("/", {"state": "failed"}),
        ("/session", {"id": sid}),
        ("/timeline", {"id": sid}),
        ("/tools", {"id": sid}),
        ("/tools", {}),
    ]:
        page = client.get(path, params=params).text
        assert "<script>window" not in page, path
        assert "<img src=x" not in page, path
        assert "&lt;script&gt;window.__pwned" in page, path
    page = client.get("/session", params={"id": sid}).text
    assert "<b>id</b>" not in page and "evil-&lt;b&gt;id&lt;/b&gt;" in page


def test_security_headers_on_pages_and_errors(client: TestClient) -> None:
    """Pages, static files and error pages carry the strict CSP and the other headers."""
    for path in ["/", "/static/app.js", "/session?id=missing", "/nowhere"]:
        response = client.get(path)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert "<script>" not in client.get("/").text  # only <script src=...>


def test_foreign_host_header_is_refused(client: TestClient) -> None:
    """A request whose Host is not the bound host gets 421 (DNS rebinding)."""
    assert client.get("/", headers={"host": f"evil.example:{PORT}"}).status_code == 421
    assert client.get("/", headers={"host": "127.0.0.1:9999"}).status_code == 421
    assert client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_only_get_and_head(client: TestClient) -> None:
    """Every method that could write is refused with 405."""
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        response = client.request(method, "/")
        assert response.status_code == 405
        assert response.headers["allow"] == "GET, HEAD"
    assert client.head("/").status_code == 200


def test_token_required_on_every_request(demo_db: Path) -> None:
    """With a token, requests without it get 401; ?token= sets a cookie and leaves the URL."""
    token = "s3cret-token-0123456789"
    with client_for(demo_db, token=token) as c:
        assert c.get("/").status_code == 401
        assert c.get("/static/app.css").status_code == 401
        assert c.get("/", params={"token": "wrong-token-0123456789"}).status_code == 401
        assert c.get("/", headers={"authorization": f"Bearer {token}"}).status_code == 200
        first = c.get("/store", params={"token": token, "check": "full"})
        assert first.status_code == 303
        assert first.headers["location"] == "/store?check=full"
        assert "HttpOnly" in first.headers["set-cookie"]
        assert c.get("/store").status_code == 200  # the cookie now carries it


def test_filters_select_the_right_sessions(client: TestClient) -> None:
    """State, kind, owner, label, text and modified-time filters narrow the list."""

    def listed(**params: str | list[str]) -> list[str]:
        return ids_on(client.get("/", params=params).text)

    assert set(listed(state="failed")) == {demo_store.PARENT_ID, demo_store.HOSTILE_ID}
    assert listed(kind="subagent") == [demo_store.CHILD_ID]
    assert listed(owner="alice") == [demo_store.PARENT_ID]
    assert listed(label="task=fix-tests") == [demo_store.PARENT_ID]
    assert listed(q="FAILING") == [demo_store.PARENT_ID]
    assert listed(q="bulk session 7", state=["idle"]) == ["bulk-000007"]
    assert listed(before="2000-01-01") == []
    assert len(listed(after="2000-01-01")) == 50
    assert client.get("/", params={"after": "yesterday"}).status_code == 400


def test_counts_by_state_and_kind(client: TestClient) -> None:
    """The list shows the store-wide counts and the number matching the filter."""
    page = client.get("/", params={"state": "failed"}).text
    assert '<span id="matching">2</span>' in page
    assert ">subagent 1</a>" in page
    assert re.search(r"<strong>64</strong> sessions in the store", page)


def test_keyset_paging_visits_every_session_once_both_ways(client: TestClient) -> None:
    """Older links walk all rows newest first without repeats; newer links walk back."""
    seen: list[str] = []
    pages: list[str] = []
    path = "/"
    while True:
        page = client.get(path).text
        pages.append(page)
        seen += ids_on(page)
        found = re.search(r'id="older" href="([^"]+)"', page)
        if not found:
            break
        path = html.unescape(found.group(1))
    assert len(seen) == len(set(seen)) == 64
    back = re.search(r'id="newer" href="([^"]+)"', pages[-1])
    assert back is not None
    assert ids_on(client.get(html.unescape(back.group(1))).text) == ids_on(pages[0])
    assert client.get("/", params={"older": "not-a-cursor"}).status_code == 400


def test_timeline_pages_both_ways_by_cursor(tmp_path: Path) -> None:
    """Earlier/later links page through a 250-record log by cursor; gaps are visible."""
    path = tmp_path / "long.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("long"))
        for n in range(250):
            if n == 100:
                store.events.append_gap("long", "lost records")
            store.events.append_event("long", Event(type="turn.start", seq=n))
    with client_for(path) as c:
        tail = c.get("/timeline", params={"id": "long"}).text
        positions = [int(p) for p in re.findall(r'<td class="num">(\d+)</td>', tail)]
        assert positions == list(range(152, 252))
        assert 'id="follow"' in tail
        earlier = html.unescape(re.search(r'id="earlier" href="([^"]+)"', tail).group(1))  # type: ignore[union-attr]
        page = c.get(earlier).text
        assert [int(p) for p in re.findall(r'<td class="num">(\d+)</td>', page)] == list(
            range(52, 152)
        )
        assert "gap: lost records" in page and 'id="follow"' not in page
        later = html.unescape(re.search(r'id="later" href="([^"]+)"', page).group(1))  # type: ignore[union-attr]
        assert re.findall(r'<td class="num">(\d+)</td>', c.get(later).text)[0] == "152"
        first = c.get("/timeline", params={"id": "long", "after": ""}).text
        assert re.findall(r'<td class="num">(\d+)</td>', first)[0] == "1"
        bad = c.get("/timeline", params={"id": "long", "before": "bm9wZQ"})
        assert bad.status_code == 400


def test_errors_first_and_store_wide_view(client: TestClient) -> None:
    """Errors-first puts failed calls on top; the by-tool view counts calls and errors."""
    page = client.get("/tools", params={"id": demo_store.PARENT_ID, "errors": "first"}).text
    first_row = page.split("<tbody>")[1].split("</tr>")[0]
    assert "run_tests" in first_row and 'class="is-error"' in first_row
    assert "<meter" in page
    summary = client.get("/tools").text
    assert re.search(
        r'run_tests</a></td>\s*<td class="num">1</td>\s*<td class="num">1</td>', summary
    )


def test_unknown_session_is_404(client: TestClient) -> None:
    """A missing id is a 404 page naming it, on every per-session view."""
    for path in ("/session", "/timeline", "/tools"):
        response = client.get(path, params={"id": "no-such-session"})
        assert response.status_code == 404
        assert "no-such-session" in response.text


@pytest.mark.parametrize("writer_open", [False, True], ids=["closed", "writer-open"])
def test_browsing_leaves_the_file_unchanged(tmp_path: Path, writer_open: bool) -> None:
    """After every page is read, the database file and its WAL are byte for byte the same.

    Also while an agent still holds the store open with un-checkpointed WAL content.
    """
    demo_db = tmp_path / "demo.db"
    writer = demo_store.build(demo_db, extra_sessions=5)
    if not writer_open:
        writer.close()
    before = file_digests(demo_db)
    if writer_open:
        assert before.get("-wal"), "the live writer should leave WAL content"
    with client_for(demo_db) as c:
        for path in (
            "/",
            "/?state=failed&label=task%3Dfix-tests",
            "/tools",
            "/retention",
            "/store?check=full",
            f"/session?id={demo_store.PARENT_ID}",
            f"/timeline?id={demo_store.PARENT_ID}",
            f"/tools?id={demo_store.PARENT_ID}",
        ):
            assert c.get(path).status_code == 200
            assert c.post(path).status_code == 405
    assert file_digests(demo_db) == before
    writer.close()


def test_counts_follow_writes_of_another_store(demo_db: Path) -> None:
    """Counts are cached per inventory generation: a save elsewhere shows on the next page."""
    with client_for(demo_db) as c:
        assert ">failed 2</a>" in c.get("/").text
        with SQLiteStore(demo_db) as writer:
            extra = Session.new("one-more-failure")
            extra.fail("boom")
            writer.sessions.save(extra)
            page = c.get("/").text
            assert ">failed 3</a>" in page
            assert '<span id="matching">65</span>' in page
            writer.events.append_event("one-more-failure", Event(type="note"))
            assert ">failed 3</a>" in c.get("/").text


def test_bad_ids_and_the_end_of_a_log(client: TestClient) -> None:
    """An invalid id is a 404 or 400 page, never a 500; the end of a log offers live follow."""
    assert client.get("/session", params={"id": "a\x00b"}).status_code == 404
    assert client.get("/timeline", params={"id": "a\x00b"}).status_code == 400
    tail = client.get("/timeline", params={"id": demo_store.LIVE_ID}).text
    cursor = html.unescape(re.search(r'data-after="([^"]+)"', tail).group(1))  # type: ignore[union-attr]
    end = client.get("/timeline", params={"id": demo_store.LIVE_ID, "after": cursor}).text
    assert "No records yet." in end and 'id="follow"' in end
    assert f'data-after="{html.escape(cursor)}"' in end


def test_retention_page_plans_without_deleting(tmp_path: Path) -> None:
    """The retention page lists what the policy would delete and the history; nothing goes."""
    from datetime import UTC, datetime, timedelta

    import retention
    from cli.ui_cmd import PolicySource
    from sqlstore.ui.context import Viewer

    path = tmp_path / "demo.db"
    with demo_store.build(path) as writer:
        started = datetime.now(UTC)
        retention.record_run(
            writer,
            retention.RunRecord(started, started, "policy-hash-1234", 3, 2, 1, 0, detail="sweep"),
        )
    policy = retention.Policy(child=retention.Rule(max_age=timedelta(microseconds=1)))
    viewer = Viewer(
        store=SQLiteStore(path, readonly=True, create=False),
        retention=PolicySource(retention.RetentionConfig(policy=policy)),
    )
    app = create_app(viewer, GuardConfig(host="127.0.0.1", port=PORT))
    before = file_digests(path)
    with TestClient(app, base_url=BASE) as c:
        page = c.get("/retention").text
    assert f'href="/session?id={demo_store.CHILD_ID}"' in page
    assert "<td>age</td>" in page
    assert "policy-hash-" in page and '<td class="num">2</td>' in page
    assert file_digests(path) == before
    with SQLiteStore(path, readonly=True, create=False) as store:
        assert store.sessions.load(demo_store.CHILD_ID).id == demo_store.CHILD_ID


def test_session_without_messages_points_at_its_log(tmp_path: Path) -> None:
    """A session whose conversation lives in its event log links to the timeline instead."""
    path = tmp_path / "items.db"
    with SQLiteStore(path) as store:
        store.sessions.save(Session.new("agents-1", title="kept as items"))
        item = {"item": {"type": "message", "role": "user", "content": "hello"}}
        store.events.append_event("agents-1", Event(type="openai_agents.item", data=item))
    with client_for(path) as c:
        page = c.get("/session", params={"id": "agents-1"}).text
        assert 'id="log-note"' in page and "(1 record," in page
        timeline = c.get("/timeline", params={"id": "agents-1"}).text
        assert "type=message · role=user · content=hello" in timeline
