"""A private ``redis-server`` for tests: free loopback port, temp dir, stopped afterwards.

Import the fixtures into a test module (``from tests.redis_server import redis_server,
redis_url``). One server is started per test session on 127.0.0.1 only, with
persistence off; every test gets its own key prefix, and its keys are removed
after it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

START_TIMEOUT_S = 30.0
"""Longest wait for the server to answer PING after start (bounded; never asserted on)."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class RedisServer:
    """A running redis-server process."""

    process: subprocess.Popen[bytes]
    port: int
    directory: Path

    @property
    def url(self) -> str:
        """The ``redis://`` URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """Return a new client of database 0."""
        return redis.Redis(host="127.0.0.1", port=self.port, db=0)

    def stop(self) -> None:
        """Terminate the server (kill it if it does not exit) and remove its directory."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(START_TIMEOUT_S)
        shutil.rmtree(self.directory, ignore_errors=True)


def start_server(*extra: str) -> RedisServer:
    """Start redis-server on a free loopback port with persistence off; wait until it answers."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
    for _attempt in range(5):
        port = free_port()
        directory = Path(tempfile.mkdtemp(prefix="sqlstore-redis-"))
        args = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            *extra,
        ]
        process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=directory
        )
        server = RedisServer(process, port, directory)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with server.client() as client:
                    if client.ping():
                        return server
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        server.stop()  # exited (port taken meanwhile?) or never answered: try another port
    raise RuntimeError("could not start redis-server on a free loopback port")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One private redis-server for the whole test session."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


def drop_prefix(server: RedisServer, prefix: str) -> None:
    """Delete every key under ``prefix``."""
    pattern = "".join("\\" + ch if ch in "*?[]\\" else ch for ch in prefix) + "*"
    with server.client() as client:
        batch = list(client.scan_iter(match=pattern, count=1000))
        if batch:
            client.unlink(*batch)


@pytest.fixture
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """A store URL on the private server with a key prefix of its own (keys dropped after)."""
    prefix = f"t{uuid.uuid4().hex[:12]}:"
    try:
        yield f"{redis_server.url}?prefix={prefix}"
    finally:
        drop_prefix(redis_server, prefix)
