"""docs/redis.md: its Python examples run against a private redis-server."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from redis_server import RedisServer, drop_prefix, redis_server  # noqa: F401  (fixture)

PAGE = Path(__file__).resolve().parents[1] / "docs" / "redis.md"
DOC_HOST = "127.0.0.1:6379"


def test_redis_page_examples_run(
    redis_server: RedisServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every Python block of docs/redis.md runs in order, with the doc's address made ours."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs"}
    try:
        for number, block in enumerate(blocks, start=1):
            source = block.replace(DOC_HOST, f"127.0.0.1:{redis_server.port}")
            source = source.replace("port=6379", f"port={redis_server.port}")
            exec(compile(source, f"docs/redis.md block {number}", "exec"), namespace)
    finally:
        drop_prefix(redis_server, "docs-example:")
    assert os.path.exists(tmp_path / "sessions.db")
