"""Helpers shared by the framework-integration tests: a store per backend, examples, spawn."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any

import pytest

import sqlstore
from tests.test_cli_process import TIMEOUT_S, env_without_db

BACKENDS = ["sqlite", "memory", "redis"]
"""The backends every integration runs on (``redis`` needs the private server fixture)."""

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def backend_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Open a fresh store of the backend named by ``request.param`` (caller closes it)."""
    if request.param == "sqlite":
        return sqlstore.open(str(tmp_path / "ours.db"))
    if request.param == "memory":
        return sqlstore.MemoryStore()
    return sqlstore.open(request.getfixturevalue("redis_url"))


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``examples/<name>`` in a fresh interpreter; fail with its stderr if it fails."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env_without_db(),
    )
    assert done.returncode == 0, done.stderr
    return done


def spawn() -> SpawnContext:
    """The ``spawn`` multiprocessing context (a fresh interpreter per child)."""
    return multiprocessing.get_context("spawn")
