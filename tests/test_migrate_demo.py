"""examples/demo.py, the README main job, runs and is idempotent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.py"


def test_demo_imports_the_samples_once_and_lists_them(tmp_path: Path) -> None:
    """The demo creates ./sessions.db, lists 7 sessions, and a second run imports nothing."""
    first = subprocess.run(
        [sys.executable, str(DEMO)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "runlogs: imported 4" in first.stdout and "mecatl-store: imported 3" in first.stdout
    assert "sess-2026-11-29-review/sub/call_2  subagent   completed" in first.stdout
    assert (tmp_path / "sessions.db").exists()
    second = subprocess.run(
        [sys.executable, str(DEMO)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "runlogs: imported 0" in second.stdout and "already_imported 4" in second.stdout
    listing = [line for line in second.stdout.splitlines() if line.startswith("2026")]
    assert len(listing) == 4
