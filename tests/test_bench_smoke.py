"""Smoke tests of ``bench/``: every script runs end to end with tiny sizes.

They keep the benchmark scripts from rotting. They assert nothing about speed
(timings belong to ``python bench/run.py``), only that each script finishes,
reports its rows, and that ``run.py`` writes the report and keeps the analysis.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH = REPO_ROOT / "bench"
SCRIPTS = [
    "append_single",
    "append_batch",
    "append_threads",
    "append_procs",
    "read_events",
    "read_tail",
    "follow_latency",
    "snapshot_save",
    "prune",
    "checkpoint_stall",
    "migrate",
    "peers",
    "redis_store",
    "aio_append",
    "ui_pages",
    "openai_agents_session",
    "adk_session_service",
    "langgraph_saver",
]
TIMEOUT_S = 120


def peers_installed() -> bool:
    """True when the optional peer stores of bench/peers.py can be imported."""
    for module in ("agents", "langgraph.checkpoint.sqlite"):
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except ModuleNotFoundError:
            return False
    return True


def run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a bench command from the repository root with the repository importable."""
    paths = [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    return subprocess.run(
        [sys.executable, *argv],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs_quick(script: str, tmp_path: Path) -> None:
    """Each script finishes with --quick --reps 1 and writes a result with at least one row."""
    out = tmp_path / "result.json"
    argv = [str(BENCH / f"{script}.py"), "--quick", "--reps", "1", "--dir", str(tmp_path)]
    argv += ["--json", str(out)]
    if script == "peers" and not peers_installed():
        argv.append("--no-peers")  # optional bench dependencies, not installed here
    done = run(argv, tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["script"] == script
    assert result["rows"], result
    for row in result["rows"]:
        assert row["measure"] and row["ours"] and row["goal"]
        assert row["met"] in (True, False, None)
        if row["met"] is None:
            # A row without a verdict is either report-only or says why it has no figure.
            assert row["goal"] == "report" or "not measured" in row["ours"], row
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith("sqlstore-bench-")]
    assert leftovers == [], "scratch directories must be removed"


def test_peers_without_peers_says_not_measured(tmp_path: Path) -> None:
    """With --no-peers the peer rows say they were not measured and give no verdict."""
    out = tmp_path / "peers.json"
    done = run(
        [str(BENCH / "peers.py"), "--quick", "--reps", "1", "--no-peers", "--json", str(out)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert len(rows) == 2
    assert all(row["met"] is None and "not measured" in row["ours"] for row in rows)


def test_run_writes_report_and_keeps_analysis(tmp_path: Path) -> None:
    """run.py writes tables and machine facts and keeps the text after its marker line."""
    spec = importlib.util.spec_from_file_location("bench_run", BENCH / "run.py")
    assert spec is not None and spec.loader is not None
    bench_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_run)
    report = tmp_path / "benchmarks.md"
    report.write_text(f"old generated part\n{bench_run.MARKER}\n## Analysis\n\nkept text\n")
    done = run(
        [
            str(BENCH / "run.py"),
            "--quick",
            "--reps",
            "1",
            "--dir",
            str(tmp_path),
            "--out",
            str(report),
            "--only",
            "append_single",
            "read_events",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    text = report.read_text(encoding="utf-8")
    assert "old generated part" not in text
    assert text.count(bench_run.MARKER) == 1
    assert text.endswith("## Analysis\n\nkept text\n")
    for expected in ("| nproc |", "SQLite (apsw)", "| apsw |", "python bench/run.py --quick"):
        assert expected in text
    assert "durable `append_event`/s, one thread" in text
    assert "`read` of 600 events" in text
    assert "the script failed" not in text
