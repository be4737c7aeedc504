"""``sqlstore.migrate.run_migration`` of run logs, against reading + ``json.loads`` of the files.

Run: ``python bench/migrate.py [--files N] [--calls C] [--quick]``.

Setup (once): ``--files`` openzot run logs (the format of JSONL-FORMATS.md, as
in ``examples/runlogs``), each a run with ``--calls`` tool calls (request, tool
event and response per call, ~250-byte results). Each repetition imports the
directory into a fresh ``SQLiteStore`` (``durability="full"``, default batch of
25 sessions per transaction) and, as the baseline, reads every file and
``json.loads`` every line. Figures are source MB/s (1 MB = 10^6 bytes); the page
cache is warm for both (one untimed baseline pass first).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness import (
    Result,
    Row,
    emit,
    make_parser,
    median,
    not_measured,
    sizes,
    times,
    work_dir,
)

from sqlstore import SQLiteStore

GOAL_RATIO = 0.5
MEASURE = "migrate run logs: MB/s"
GOAL = f"≥ {GOAL_RATIO}x MB/s"
RESULT_TEXT = ("collected 12 items; 11 passed, 1 failed: test_server.py::test_reconnect " * 4)[:250]


def _at(start: datetime, step: int) -> str:
    return (start + timedelta(milliseconds=10 * step)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_runlog(folder: Path, n: int, calls: int) -> int:
    """Write run log number ``n`` with ``calls`` tool calls; return its size in bytes."""
    start = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(minutes=n)
    run_id = start.strftime("%Y%m%d-%H%M%S")
    records: list[dict[str, Any]] = [
        {
            "kind": "meta",
            "meta": {
                "id": run_id,
                "task": f"fix flaky test number {n}",
                "model": "glm-5.2",
                "provider": "zai",
                "driver": "openai",
                "workdir": "/src/app",
            },
        },
        {"kind": "message", "message": {"type": "user", "text": f"fix flaky test number {n}"}},
    ]
    for c in range(1, calls + 1):
        call_id = f"call_{c}"
        command = f"pytest -x tests/test_server.py -k case_{c}"
        records += [
            {
                "kind": "message",
                "message": {
                    "type": "activity",
                    "text": "",
                    "activity": {
                        "kind": "request",
                        "id": call_id,
                        "name": "bash",
                        "arguments": json.dumps({"cmd": command}),
                    },
                },
            },
            {
                "kind": "event",
                "event": {"kind": "tool", "tool": "bash", "text": command, "iteration": c},
            },
            {
                "kind": "message",
                "message": {
                    "type": "activity",
                    "text": "",
                    "activity": {
                        "kind": "response",
                        "id": call_id,
                        "name": "bash",
                        "result": RESULT_TEXT,
                        "failure": "",
                    },
                },
            },
        ]
    records += [
        {"kind": "message", "message": {"type": "bot", "text": "Fixed: the test waits now."}},
        {
            "kind": "result",
            "result": {
                "reason": "done",
                "message": "fixed",
                "code": 0,
                "iterations": calls,
                "calls": calls,
                "continuations": 0,
                "cycles": 0,
                "settles": 1,
                "inputTokens": 1000 * calls,
                "outputTokens": 100 * calls,
            },
        },
    ]
    lines = []
    for step, record in enumerate(records):
        ordered = {"kind": record.pop("kind"), "at": _at(start, step), **record}
        lines.append(json.dumps(ordered, separators=(",", ":")))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    (folder / f"{run_id}.jsonl").write_bytes(data)
    return len(data)


def baseline(folder: Path) -> float:
    """Return seconds to read every file and ``json.loads`` every line."""
    started = time.perf_counter()
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            if line:
                json.loads(line)
    return time.perf_counter() - started


def ours(folder: Path, db: Path, files: int) -> tuple[float, dict[str, Any]]:
    """Return seconds of one import of ``folder`` into a fresh store, and its summary."""
    from sqlstore.migrate import run_migration

    with SQLiteStore(db) as store:
        started = time.perf_counter()
        report = run_migration(store, folder, fmt="runlog")
        elapsed = time.perf_counter() - started
        imported = len(store.sessions.list())
    summary = report.to_json() if hasattr(report, "to_json") else {}
    if imported != files:
        raise SystemExit(f"imported {imported} sessions of {files}: {summary}")
    return elapsed, {"imported": imported, "ok": getattr(report, "ok", None)}


def main() -> None:
    """Measure, print and (with --json) write the result."""
    parser = make_parser(__doc__ or "")
    parser.add_argument("--files", type=int, default=None, help="run logs in the source")
    parser.add_argument("--calls", type=int, default=None, help="tool calls per run log")
    args = parser.parse_args()
    size = sizes(args, full={"files": 2000, "calls": 12}, quick={"files": 5, "calls": 2})
    result = Result("migrate", "migrate run logs", size)
    try:
        from sqlstore.migrate import run_migration  # noqa: F401 - probing that the API landed
    except ImportError as exc:
        result.rows.append(not_measured(MEASURE, GOAL, f"sqlstore.migrate missing ({exc})"))
        emit(result, args)
        return
    measured: list[float] = []
    base: list[float] = []
    with work_dir(args, "migrate") as directory:
        source = directory / "runlogs"
        source.mkdir()
        total = sum(write_runlog(source, n, size["calls"]) for n in range(size["files"]))
        baseline(source)
        last: dict[str, Any] = {}
        for rep in range(size["reps"]):
            base.append(total / 1e6 / baseline(source))
            seconds, last = ours(source, directory / f"migrate-{rep}.db", size["files"])
            measured.append(total / 1e6 / seconds)
    ratios = [o / b for o, b in zip(measured, base, strict=True)]
    ratio = median(ratios)
    result.sizes["source_bytes"] = total
    result.rows.append(
        Row(
            f"migrate {size['files']:,} run logs ({total / 1e6:.1f} MB): MB/s",
            f"{median(measured):.2f} MB/s",
            f"{median(base):.1f} MB/s read + json.loads",
            times(ratio),
            GOAL,
            ratio >= GOAL_RATIO,
            note=f"{median(measured) * 1e6 / total * size['files']:.0f} sessions/s; {last}",
        )
    )
    result.details = {"ours_mb_s": measured, "baseline_mb_s": base, "ratios": ratios}
    emit(result, args)


if __name__ == "__main__":
    main()
