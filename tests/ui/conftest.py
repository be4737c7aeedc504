"""Fixtures of the viewer tests: a demo store, an in-process client, a real server
process (the installed console script), and a real headless Chromium."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import retention
from cli.ui_cmd import CheckpointSource, PolicySource
from sqlstore import SQLiteStore
from tests.ui import demo_store

WAIT_S = 30.0
"""Upper bound of any wait on the server or the browser (never a timing assertion)."""

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def free_port() -> int:
    """Return a loopback TCP port that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def file_digests(path: Path) -> dict[str, str]:
    """Return the sha256 of the database file and of its WAL content.

    A missing and an empty WAL both count as no WAL: SQLite lets a read-only
    connection create the empty ``-wal``/``-shm`` files it needs to read a WAL-mode
    database (https://sqlite.org/wal.html#readonly); no byte of the data is written.
    """
    found = {}
    for suffix in ("", "-wal"):
        part = Path(f"{path}{suffix}")
        if part.exists() and part.stat().st_size:
            found[suffix or "db"] = hashlib.sha256(part.read_bytes()).hexdigest()
    return found


def console_script() -> str:
    """Return the installed `sqlstore` console script."""
    beside = Path(sys.executable).parent / "sqlstore"
    found = str(beside) if beside.exists() else shutil.which("sqlstore")
    assert found, "the sqlstore console script is not installed (pip install -e .)"
    return found


def raw_head(port: int, request: bytes) -> bytes:
    """Send one raw HTTP request to the loopback server on ``port``; return the response head."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(request)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                break
            head += chunk
    return head


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    """A closed demo store file (see tests/ui/demo_store.py)."""
    path = tmp_path / "demo.db"
    demo_store.build(path, extra_sessions=60).close()
    return path


def make_viewer(path: Path) -> object:
    """Return a Viewer over the store at ``path``, opened read-only like the command does."""
    from sqlstore.ui.context import Viewer

    store = SQLiteStore(path, readonly=True, create=False)
    return Viewer(
        store=store, retention=PolicySource(retention.DEFAULT_CONFIG), threads=CheckpointSource()
    )


@dataclass
class Served:
    """A running `sqlstore ui` process."""

    proc: subprocess.Popen[str]
    url: str
    db: Path

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig``; return the exit status and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return self.proc.returncode, err


def start_server(db: Path, *extra: str, env: dict[str, str] | None = None) -> Served:
    """Start `sqlstore --db DB ui --port P` and wait until it answers."""
    port = free_port()
    proc = subprocess.Popen(
        [console_script(), "--db", str(db), "ui", "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else {**os.environ, **env},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            with urllib.request.urlopen(url + "/static/app.css", timeout=2):
                break
        except urllib.error.HTTPError:
            break  # it answers (401 with --token)
        except (urllib.error.URLError, ConnectionError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                _, err = proc.communicate()
                raise AssertionError(f"sqlstore ui did not start: {err}") from None
            time.sleep(0.05)
    return Served(proc, url, db)


@pytest.fixture
def server(demo_db: Path) -> Iterator[Served]:
    """`sqlstore ui` serving the demo store in a real process."""
    served = start_server(demo_db)
    yield served
    served.stop()


def _require_browser() -> None:
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return
    if os.environ.get("CI"):
        raise AssertionError("chromium and chromium-driver must be installed (see .ci/run)")
    pytest.skip("Debian's chromium and chromium-driver are not installed here")


@pytest.fixture
def browser() -> Iterator[object]:
    """A headless Chromium driven through Debian's chromedriver (nothing downloaded)."""
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="sqlstore-ui-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/images with SQLSTORE_UI_SCREENSHOTS=1, else a temp dir."""
    if os.environ.get("SQLSTORE_UI_SCREENSHOTS") == "1":
        target = Path(__file__).resolve().parents[2] / "docs" / "images"
    else:
        target = tmp_path / "shots"
    target.mkdir(parents=True, exist_ok=True)
    return target
