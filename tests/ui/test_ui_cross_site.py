"""Requests another site's page causes are refused (403); typed URLs and the viewer's own are not.

A page on any site can make the user's browser send GETs to the local viewer
(``<img src>``, ``EventSource``, ``fetch``): the Host check passes for them, so
they could hold every live-stream slot or run ``check=full``. Browsers mark such
requests with ``Sec-Fetch-Site`` and ``Origin``; the guard refuses them.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sqlstore.ui.app import create_app
from sqlstore.ui.security import GuardConfig
from tests.ui.conftest import WAIT_S, make_viewer, raw_head, start_server
from tests.ui.demo_store import LIVE_ID

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"
PATHS = ["/", "/store?check=full", f"/stream?id={LIVE_ID}", "/static/app.css", "/nowhere"]
CROSS = [
    {"sec-fetch-site": "cross-site"},
    {"sec-fetch-site": "same-site"},  # another port of 127.0.0.1, say
    {"sec-fetch-site": "Cross-Site"},
    {"origin": "http://evil.example"},
    {"origin": "null"},
    {"origin": f"http://localhost:{PORT + 1}"},
    {"origin": f"https://127.0.0.1:{PORT}"},
    {"sec-fetch-site": "same-origin", "origin": "http://evil.example"},
]
SAME = [
    {},
    {"sec-fetch-site": "none"},  # typed URL, bookmark, --open
    {"sec-fetch-site": "same-origin"},
    {"sec-fetch-site": "same-origin", "origin": BASE},
]


@pytest.fixture
def client(demo_db: Path) -> Iterator[TestClient]:
    """A client of the viewer over the demo store (no token)."""
    app = create_app(make_viewer(demo_db), GuardConfig(host="127.0.0.1", port=PORT))  # type: ignore[arg-type]
    with TestClient(app, base_url=BASE, follow_redirects=False) as c:
        yield c


@pytest.mark.parametrize("headers", CROSS, ids=lambda h: ",".join(f"{k}={v}" for k, v in h.items()))
def test_cross_site_requests_are_refused_on_every_path(
    client: TestClient, headers: dict[str, str]
) -> None:
    """Pages, check=full, the live stream, static files: 403 with a short plain message."""
    for path in PATHS:
        got = client.get(path, headers=headers)
        assert got.status_code == 403, (path, got.status_code)
        assert got.headers["content-type"].startswith("text/plain")
        assert got.text.startswith("Cross-site request refused")
        assert got.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("headers", SAME, ids=lambda h: ",".join(h.values()) or "no headers")
def test_direct_and_same_origin_requests_are_served(
    client: TestClient, headers: dict[str, str]
) -> None:
    """A typed URL, the viewer's own requests and clients without the headers get their pages."""
    for path in ("/", "/store?check=full", "/static/app.css"):
        assert client.get(path, headers=headers).status_code == 200, path


def _raw(port: int, path: str, extra: str) -> tuple[int, bytes]:
    """Send one GET with ``extra`` header lines; return the status and the response head."""
    head = raw_head(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode())
    return int(head.split(b" ", 2)[1]), head


def test_a_real_server_refuses_cross_site_streams(demo_db: Path) -> None:
    """Through uvicorn: 40 cross-site stream requests are 403, and a direct stream still opens."""
    served = start_server(demo_db)
    port = int(served.url.rsplit(":", 1)[1])
    try:
        for n in range(40):  # more than the 32 live-stream slots
            extra = "Sec-Fetch-Site: cross-site\r\n" if n % 2 else "Origin: http://evil.example\r\n"
            status, data = _raw(port, f"/stream?id={LIVE_ID}", extra)
            assert status == 403 and b"text/plain" in data
        status, data = _raw(port, f"/stream?id={LIVE_ID}", "Sec-Fetch-Site: same-origin\r\n")
        assert status == 200 and b"text/event-stream" in data
    finally:
        code, err = served.stop()
    assert code == 0, err


def test_open_hands_the_browser_a_one_time_code_not_the_token(
    demo_db: Path, tmp_path: Path
) -> None:
    """--open with --token hands the browser a one-time launch code (used once), not the token."""
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "browser.sh"
    fake.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    fake.chmod(0o755)
    token = "open-browser-token-1234"
    served = start_server(demo_db, "--open", "--token", token, env={"BROWSER": f"{fake} %s"})
    try:
        deadline = time.monotonic() + WAIT_S
        while not opened.exists() or not opened.read_text():
            assert time.monotonic() < deadline, "the browser was not started"
            time.sleep(0.05)
        url = opened.read_text().strip()
        assert url.startswith(f"{served.url}/?launch=") and token not in url

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        opener = urllib.request.build_opener(NoRedirect)
        with pytest.raises(urllib.error.HTTPError) as first:
            opener.open(url, timeout=WAIT_S)
        assert first.value.code == 303 and first.value.headers["location"] == "/"
        assert f"sqlstore_token={token};" in first.value.headers["set-cookie"]
        first.value.close()
        with pytest.raises(urllib.error.HTTPError) as again:
            opener.open(url, timeout=WAIT_S)
        assert again.value.code == 401  # spent
        again.value.close()
    finally:
        code, err = served.stop()
    assert code == 0 and token not in err
