"""Run every benchmark and write ``docs/benchmarks.md``.

Run: ``python bench/run.py [--quick] [--reps N] [--dir DIR] [--out FILE] [--no-peers]``.

Each script runs in its own process (``python bench/<name>.py --json ...``), so
one that fails or is missing an optional dependency becomes a row that says so
instead of stopping the run. The generated part of the output file ends at a
marker line; whatever follows the marker in an existing file (the hand-written
analysis) is kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
SCRIPTS = (
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
)
MARKER = "<!-- end of generated part: everything below this line is kept by bench/run.py -->"
DEFAULT_ANALYSIS = "\n## Analysis\n\nNo analysis written yet.\n"
SCRIPT_TIMEOUT_S = 1800


def command_output(argv: list[str]) -> str:
    """Return a command's stripped stdout, or why it could not run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"({argv[0]} failed: {exc})"
    return (done.stdout or done.stderr).strip()


def machine_facts(directory: str) -> list[tuple[str, str]]:
    """Return (name, value) pairs describing the machine and the file system used."""
    import apsw

    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "unknown"
    df = command_output(["df", "-T", directory]).splitlines()
    return [
        ("date (UTC)", datetime.now(UTC).strftime("%Y-%m-%d %H:%M")),
        ("nproc", command_output(["nproc"])),
        ("memory", _memory()),
        ("bench directory", directory),
        ("file system (`df -T`)", " ".join(df[-1].split()[:2]) if df else "unknown"),
        ("file system (`stat -f -c %T`)", command_output(["stat", "-f", "-c", "%T", directory])),
        ("kernel", platform.release()),
        ("Python", sys.version.split()[0] + f" ({platform.python_implementation()})"),
        ("SQLite (apsw)", apsw.sqlite_lib_version()),
        ("apsw", apsw.apswversion()),
        ("SQLite (Python sqlite3, used by the peers)", _sqlite3_version()),
        ("git commit", _git_commit()),
        ("load average at start", load),
    ]


def _git_commit() -> str:
    """Return the checkout's commit, marked ``-dirty`` when the working tree has changes."""
    argv = ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--abbrev=12"]
    return command_output(argv)


def _memory() -> str:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            first = handle.readline().split()
        return f"{int(first[1]) / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        return "unknown"


def _sqlite3_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def run_script(name: str, args: argparse.Namespace, directory: str) -> dict[str, Any]:
    """Run one script and return its result (or a result saying why it has none)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = Path(handle.name)
    argv = [sys.executable, str(HERE / f"{name}.py"), "--json", str(out), "--dir", directory]
    if args.quick:
        argv.append("--quick")
    if args.reps is not None:
        argv += ["--reps", str(args.reps)]
    if name == "peers" and args.no_peers:
        argv.append("--no-peers")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
        ),
    }
    started = time.perf_counter()
    print(f"-- {name} ...", flush=True)
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S, env=env, check=False
        )
        failure = None if done.returncode == 0 else f"exit {done.returncode}"
        stdout, stderr = done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        failure = f"timed out after {SCRIPT_TIMEOUT_S} s"
        stdout = exc.stdout if isinstance(exc.stdout, str) else ""
        stderr = exc.stderr if isinstance(exc.stderr, str) else ""
    elapsed = time.perf_counter() - started
    print(stdout, end="", flush=True)
    result: dict[str, Any]
    if failure is None and out.stat().st_size:
        result = json.loads(out.read_text(encoding="utf-8"))
    else:
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        print(stderr, end="", file=sys.stderr)
        result = {
            "script": name,
            "title": name,
            "sizes": {},
            "rows": [
                {
                    "measure": name,
                    "ours": f"not measured: the script failed ({failure}): {last}",
                    "baseline": "—",
                    "ratio": "—",
                    "goal": "—",
                    "met": None,
                    "note": "",
                }
            ],
            "details": {},
            "notes": [],
        }
    out.unlink(missing_ok=True)
    result["seconds"] = elapsed
    result["argv"] = " ".join(shlex.quote(a) for a in argv[1:] if a != str(out))
    return result


def cell(text: str) -> str:
    """Escape a table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def render(
    results: list[dict[str, Any]], facts: list[tuple[str, str]], command: str, total_s: float
) -> str:
    """Return the generated markdown."""
    verdict = {True: "yes", False: "**no**", None: "—"}
    lines = [
        "# Benchmarks",
        "",
        "Generated by `bench/run.py`; do not edit above the marker line (the analysis below it is",
        "hand-written and kept when the file is regenerated).",
        "",
        "Every figure is the median of the repetitions given under *Sizes*; every ratio is taken",
        "against a baseline measured in the same run, on the same file system, and is the median",
        "of the per-repetition ratios (the machine is shared, so absolute numbers drift; the",
        "ratios are what the goals are about). Ratios (`x`) are ours ÷ baseline: above 1 is",
        "better for rates, below 1 is better for times.",
        "",
        "Command:",
        "",
        "```",
        command,
        "```",
        "",
        f"Total run time: {total_s:.0f} s.",
        "",
        "## Machine",
        "",
        "| fact | value |",
        "|---|---|",
    ]
    lines += [f"| {cell(name)} | {cell(value)} |" for name, value in facts]
    lines += [
        "",
        "## Results",
        "",
        "| measure | ours | baseline (same run) | ratio | goal | goal met? |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        for row in result["rows"]:
            lines.append(
                "| "
                + " | ".join(
                    cell(str(x))
                    for x in (
                        row["measure"],
                        row["ours"],
                        row["baseline"],
                        row["ratio"],
                        row["goal"],
                        verdict[row["met"]],
                    )
                )
                + " |"
            )
    lines += ["", "## Notes per benchmark", ""]
    for result in results:
        lines.append(f"### {result['title']} (`bench/{result['script']}.py`)")
        lines.append("")
        sizes = ", ".join(f"{k}={v}" for k, v in result["sizes"].items()) or "—"
        lines.append(f"* Sizes: {sizes}; took {result['seconds']:.0f} s.")
        lines.append(f"* Run alone: `python bench/{result['script']}.py` (see its `--help`).")
        for row in result["rows"]:
            if row["note"]:
                lines.append(f"* {row['measure']}: {row['note']}")
        lines += [f"* {note}" for note in result["notes"]]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    """Run the scripts and write the report."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions for every script")
    parser.add_argument("--dir", default=None, help="directory for databases and baselines")
    parser.add_argument("--out", default=str(REPO_ROOT / "docs" / "benchmarks.md"))
    parser.add_argument("--no-peers", action="store_true", help="skip the peer stores")
    parser.add_argument("--only", nargs="*", choices=SCRIPTS, help="run only these scripts")
    args = parser.parse_args()
    directory = os.path.abspath(args.dir or tempfile.gettempdir())
    os.makedirs(directory, exist_ok=True)
    command = "python bench/run.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    facts = machine_facts(directory)
    started = time.perf_counter()
    results = [run_script(name, args, directory) for name in (args.only or SCRIPTS)]
    total = time.perf_counter() - started
    with contextlib.suppress(OSError):
        facts.append(("load average at end", "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())))
    out = Path(args.out)
    kept = DEFAULT_ANALYSIS
    if out.exists():
        old = out.read_text(encoding="utf-8")
        if MARKER in old:
            kept = old.split(MARKER, 1)[1]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results, facts, command, total) + "\n" + MARKER + kept, encoding="utf-8")
    print(f"wrote {out} in {total:.0f} s")


if __name__ == "__main__":
    main()
