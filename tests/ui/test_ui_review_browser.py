"""Review of the viewer in a real browser: hostile text in every stored field the demo store
leaves out (ids with quotes, owner, labels, run id, lineage, pending approval, audit ids,
gap reasons) and in reflected query parameters never runs, and the CSP stays strict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By

from sqlstore import (
    Ask,
    Event,
    Kind,
    Principal,
    Relationship,
    Session,
    SQLiteStore,
    ToolCallRecord,
)
from tests.ui.conftest import Served, start_server

MARK = "window.__pwned"
PAYLOAD = '"\'><svg onload="window.__pwned=1"></svg><img src=x onerror=window.__pwned=2>'
"""Breaks out of text, double- and single-quoted attributes, and runs if unescaped."""

HOSTILE_ID = "q\"'<svg onload=window.__pwned=3>"
CHILD_ID = "child-'\"<img src=x onerror=window.__pwned=4>"


def build(path: Path) -> None:
    """Store one awaiting session and its child with the payload in every free-text field."""
    with SQLiteStore(path) as store:
        owner = Principal(issuer=PAYLOAD, subject=PAYLOAD, name=PAYLOAD)
        rel = Relationship(schedule_name=PAYLOAD, origin_session_id=PAYLOAD)
        parent = Session.new(
            HOSTILE_ID,
            kind=Kind.SCHEDULED,
            title=PAYLOAD,
            owner=owner,
            relationship=rel,
            provider_id=PAYLOAD,
            model_id=PAYLOAD,
            labels={PAYLOAD: PAYLOAD},
        )
        parent.run_id = PAYLOAD
        parent.record_user_prompt(PAYLOAD)
        parent.begin_turn()
        parent.pause_for_approval(Ask(ask_id=PAYLOAD, tool=PAYLOAD, args=PAYLOAD, reason=PAYLOAD))
        parent.extra[PAYLOAD] = PAYLOAD
        store.sessions.save(parent)
        child = Session.new(
            CHILD_ID,
            kind=Kind.TEAM_MEMBER,
            title=PAYLOAD,
            relationship=Relationship(
                parent_session_id=HOSTILE_ID, team_id=PAYLOAD, member_name=PAYLOAD
            ),
        )
        store.sessions.save(child)
        store.events.append_event(
            HOSTILE_ID, Event(type=PAYLOAD, text=PAYLOAD, data={PAYLOAD: [PAYLOAD]})
        )
        store.events.append_gap(HOSTILE_ID, PAYLOAD)
        store.audit.record(
            ToolCallRecord(
                session_id=HOSTILE_ID,
                call_id=PAYLOAD,
                tool=PAYLOAD,
                args=json.dumps({"a": PAYLOAD}),
                result=PAYLOAD,
                is_error=True,
            )
        )


@pytest.fixture
def hostile_server(tmp_path: Path) -> Iterator[Served]:
    """`sqlstore ui` over the hostile store, in a real process."""
    path = tmp_path / "hostile.db"
    build(path)
    served = start_server(path)
    yield served
    served.stop()


def test_every_field_and_reflected_parameter_stays_text(
    hostile_server: Served, browser: Any
) -> None:
    """No stored field and no query parameter adds an element or runs script, on any page."""
    sid, child, bad = quote(HOSTILE_ID), quote(CHILD_ID), quote(PAYLOAD)
    for path in [
        "/",
        f"/?q={bad}&owner={bad}&label={bad}",
        f"/?after={bad}",
        f"/?older={bad}",
        f"/session?id={sid}",
        f"/session?id={child}",
        f"/session?id={bad}",
        f"/timeline?id={sid}",
        f"/timeline?id={sid}&after={bad}",
        f"/tools?id={sid}",
        f"/tools?tool={bad}",
        "/tools",
        f"/nowhere{bad}",
    ]:
        hostile_server_url = hostile_server.url + path
        browser.get(hostile_server_url)
        assert browser.execute_script(f"return {MARK} === undefined") is True, path
        assert browser.find_elements(By.CSS_SELECTOR, "svg, img[src=x]") == [], path
    browser.get(hostile_server.url + f"/session?id={sid}")
    assert browser.find_element(By.ID, "session-id").text == HOSTILE_ID
    text = browser.find_element(By.TAG_NAME, "main").text
    assert text.count("onerror=window.__pwned=2") >= 8  # shown as text, many times


def test_csp_blocks_an_injected_inline_script(hostile_server: Served, browser: Any) -> None:
    """The CSP refuses an injected inline script, inline style and a foreign-host image."""
    browser.get(hostile_server.url + "/")
    outcome = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const seen = [];
        document.addEventListener("securitypolicyviolation", (e) => seen.push(e.violatedDirective));
        const s = document.createElement("script");
        s.textContent = "window.__inline = 1";
        document.body.appendChild(s);
        const st = document.createElement("style");
        st.textContent = "body { color: rgb(1, 2, 3) }";
        document.head.appendChild(st);
        const img = document.createElement("img");
        img.src = "http://192.0.2.1/x.png";
        document.body.appendChild(img);
        setTimeout(() => done({inline: window.__inline === undefined, seen: seen,
          color: getComputedStyle(document.body).color}), 500);
        """
    )
    assert outcome["inline"] is True
    assert outcome["color"] != "rgb(1, 2, 3)"
    assert {"script-src-elem", "style-src-elem", "img-src"} <= set(outcome["seen"]), outcome
