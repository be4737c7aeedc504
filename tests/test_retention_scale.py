"""Scale: planning a million sessions keeps memory bounded by the selected entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAX_RSS_MB = 150
ROWS = 1_000_000

# Runs in a fresh interpreter so the peak RSS (VmHWM) measures only this workload. Rows come
# from a generator (never a list): 1 % are stale children (age), 1 % are fresh
# scheduled sessions capped at 500 (cap), the rest are fresh children (kept).
# Memory may grow with the selected entries (~20,000) and the cap heap (500),
# never with the million rows scanned.
PLAN_SCRIPT = """
import json, sys
from datetime import UTC, datetime, timedelta
from retention import Policy, Rule, plan_rows
from sqlstore import Kind, Relationship, SessionMeta, State

ROWS = int(sys.argv[1])
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CHILD = (Kind.SUBAGENT, Relationship(parent_session_id="p", call_id="c"))
SCHEDULED = (Kind.SCHEDULED, Relationship(schedule_name="nightly"))

def rows():
    for i in range(ROWS):
        kind, rel = SCHEDULED if i % 100 == 1 else CHILD
        age = timedelta(days=30) if i % 100 == 0 else timedelta(seconds=i % 86_400)
        yield SessionMeta(
            id=f"session-{i:08d}", modified_at=NOW - age, version=1,
            state=State.COMPLETED, kind=kind, relationship=rel, owner=None,
            created_at=NOW - age, title="", model_id="", turns=0, estimated_bytes=1000,
        )

def peak_rss_kb():
    # VmHWM belongs to this process image; ru_maxrss would inherit the forking
    # parent's (pytest's) peak across fork + exec on Linux.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")

before = peak_rss_kb()
policy = Policy(
    child=Rule(max_age=timedelta(days=7)),
    scheduled=Rule(max_age=timedelta(days=30), max_count=500),
)
plan = plan_rows(rows(), policy, NOW)
after = peak_rss_kb()
print(json.dumps({
    "scanned": plan.scanned, "total": plan.counts.total, "by_reason": plan.counts.by_reason,
    "rss_before_kb": before, "rss_after_kb": after,
}))
"""


@pytest.mark.slow
def test_plan_one_million_rows_in_bounded_memory() -> None:
    """Planning 1,000,000 streamed rows selects exactly and peaks below 150 MB of RSS."""
    proc = subprocess.run(
        [sys.executable, "-c", PLAN_SCRIPT, str(ROWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    stale = ROWS // 100
    assert result["scanned"] == ROWS
    assert result["by_reason"] == {"age": stale, "cap": ROWS // 100 - 500}
    assert result["rss_after_kb"] < MAX_RSS_MB * 1024, result
