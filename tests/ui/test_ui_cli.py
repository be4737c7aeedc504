"""`sqlstore ui` as a command: bind refusals, missing store, the extra missing, the token,
and a clean stop on SIGTERM and Ctrl-C of the installed console script."""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from sqlstore.ui.server import check_bind, is_loopback
from tests.ui import demo_store
from tests.ui.conftest import WAIT_S, file_digests, start_server


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "refusing to serve on non-loopback address '0.0.0.0'"),
        (
            ["--host", "192.0.2.10", "--allow-remote"],
            "--allow-remote on '192.0.2.10' needs --token",
        ),
        (["--token", "short"], "the access token must be 16 to 256 characters"),
    ],
)
def test_unsafe_binds_are_refused(demo_db: Path, args: list[str], message: str) -> None:
    """A non-loopback host without --allow-remote and a token, or a bad token, exits 1."""
    result = CliRunner().invoke(cli, ["--db", str(demo_db), "ui", *args])
    assert result.exit_code == 1
    assert f"Error: {message}" in result.output
    assert "Hint: " in result.output


def test_bind_rules() -> None:
    """Loopback names pass alone; other hosts pass only with allow_remote and a token."""
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.0.2.1", "example.com"))
    guard = check_bind("192.0.2.1", allow_remote=True, token="a" * 16)
    assert guard.token == "a" * 16 and not guard.loopback


def test_missing_store_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    """`sqlstore ui` on a path with no database fails with a hint and creates no file."""
    target = tmp_path / "none.db"
    result = CliRunner().invoke(cli, ["--db", str(target), "ui"])
    assert result.exit_code == 1
    assert "Error: no database at" in result.output
    assert not target.exists()


WITHOUT_EXTRA = textwrap.dedent(
    """
    import sys
    for name in ("starlette", "uvicorn", "jinja2"):
        sys.modules[name] = None  # as if the extra were not installed
    import sqlstore
    try:
        import sqlstore.ui.app
    except ImportError as exc:
        print("import:", exc)
    from cli.main import main
    sys.argv = ["sqlstore", "--db", sys.argv[1]] + sys.argv[2:]
    main()
    """
)


def test_without_the_extra(demo_db: Path) -> None:
    """Without starlette/uvicorn/jinja2 the CLI works and `ui` names the install command."""
    ls = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, str(demo_db), "ls", "--limit", "1"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert ls.returncode == 0, ls.stderr
    assert "pip install 'sqlstore[ui]'" in ls.stdout  # the import error names it
    assert "bulk-000059" in ls.stdout
    ui = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRA, str(demo_db), "ui"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert ui.returncode == 1
    assert "Error: sqlstore ui needs the optional extra 'ui'" in ui.stderr
    assert "Hint: Install it: pip install 'sqlstore[ui]'" in ui.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_clean_stop_with_a_live_stream_open(demo_db: Path, sig: int) -> None:
    """A signal stops the server, ending an open live stream, with exit 0 and no change."""
    before = file_digests(demo_db)
    served = start_server(demo_db)
    host, port = served.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=WAIT_S)
    conn.request("GET", f"/stream?id={demo_store.LIVE_ID}&after=")
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type", "").startswith("text/event-stream")
    assert response.readline() == b"retry: 1000\n"
    while (line := response.readline()) != b"event: record\n":  # the tail is being streamed
        assert line, "the stream ended before its first record"
    code, err = served.stop(sig)
    rest = response.read().decode()
    conn.close()
    assert code == 0, err
    assert "serving" in err and "sqlstore ui: stopped" in err
    assert "event: end" in rest  # after the tail, a clean end
    assert file_digests(demo_db) == before


def test_token_through_the_console_script(demo_db: Path) -> None:
    """With --token, the real server answers 401 without it and 200 with a Bearer header."""
    token = "console-script-token-1234"
    served = start_server(demo_db, "--token", token)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(served.url + "/", timeout=WAIT_S)
        assert refused.value.code == 401
        refused.value.close()
        request = urllib.request.Request(
            served.url + "/", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=WAIT_S) as page:
            assert page.status == 200
    finally:
        served.stop()


def test_open_starts_the_browser_on_the_viewer(demo_db: Path, tmp_path: Path) -> None:
    """--open without a token hands the browser the viewer's plain URL."""
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "browser.sh"
    fake.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    fake.chmod(0o755)
    served = start_server(demo_db, "--open", env={"BROWSER": f"{fake} %s"})
    try:
        deadline = time.monotonic() + WAIT_S
        while not opened.exists() or not opened.read_text():
            assert time.monotonic() < deadline, "the browser was not started"
            time.sleep(0.05)
        assert opened.read_text().strip() == f"{served.url}/"
    finally:
        served.stop()
