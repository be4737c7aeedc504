"""Shared parts of the benchmark scripts: options, sizes, timing, the raw baseline, results.

Every script in ``bench/`` is a plain program (``python bench/<name>.py``) that
measures one row of ``docs/benchmarks.md``: it repeats the measurement
``--reps`` times (default 3, at least 1), takes the median, and compares it with
a baseline measured in the same run on the same file system (the directory
given by ``--dir``). ``--quick`` swaps in tiny sizes so a smoke test can run every
script in seconds; ``--json PATH`` writes the result for ``bench/run.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    # Lets ``python bench/x.py`` import sqlstore from a plain checkout.
    sys.path.insert(0, str(REPO_ROOT))

RAW_RECORD_BYTES = 200
"""Size of one record of the raw ``write`` + ``fsync`` baseline loop."""

DEFAULT_REPS = 3


@dataclass(slots=True)
class Row:
    """One line of the results table.

    ``met`` is True/False when the goal was checked, None when there is no goal
    or the row was not measured (then ``ours`` says why).
    """

    measure: str
    ours: str
    baseline: str
    ratio: str
    goal: str
    met: bool | None
    note: str = ""


@dataclass(slots=True)
class Result:
    """What one script measured: its table rows, the sizes used and per-repetition figures."""

    script: str
    title: str
    sizes: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Return the result as JSON-compatible data."""
        return asdict(self)


def make_parser(description: str) -> argparse.ArgumentParser:
    """Return an argument parser with the options every script shares."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument(
        "--reps", type=int, default=None, help=f"repetitions (default {DEFAULT_REPS})"
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="directory for the databases and the baseline files (default: system temp dir)",
    )
    parser.add_argument("--json", default=None, help="write the result as JSON to this file")
    return parser


def sizes(args: argparse.Namespace, full: dict[str, Any], quick: dict[str, Any]) -> dict[str, Any]:
    """Return the sizes to use: an explicit option wins, else the quick or full default."""
    chosen = quick if args.quick else full
    out: dict[str, Any] = {}
    for key, default in chosen.items():
        given = getattr(args, key, None)
        out[key] = default if given is None else given
    reps = args.reps if args.reps is not None else DEFAULT_REPS
    out["reps"] = max(1, reps)
    return out


@contextmanager
def work_dir(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """Create a scratch directory under ``--dir`` and remove it afterwards."""
    base = args.dir or tempfile.gettempdir()
    os.makedirs(base, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"sqlstore-bench-{prefix}-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def raw_fsync_rate(directory: Path, count: int) -> float:
    """Return records/s of a loop that appends 200 bytes with ``write`` then ``fsync``s.

    This is the physical limit a durable one-record-at-a-time store can reach on
    this file system (a fresh file, as an append-only log would be).
    """
    path = directory / f"raw-{time.monotonic_ns()}.log"
    record = b"r" * (RAW_RECORD_BYTES - 1) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, record)
        os.fsync(fd)
        started = time.perf_counter()
        for _ in range(count):
            os.write(fd, record)
            os.fsync(fd)
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
        path.unlink()
    return count / elapsed


class RawLog:
    """An append-only file written 200 bytes + ``fsync`` at a time: the raw baseline."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / f"raw-{time.monotonic_ns()}.log"
        self._record = b"r" * (RAW_RECORD_BYTES - 1) + b"\n"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def append(self, count: int) -> None:
        """Write and fsync ``count`` records, one at a time."""
        fd, record = self._fd, self._record
        for _ in range(count):
            os.write(fd, record)
            os.fsync(fd)

    def close(self) -> None:
        """Close and remove the file."""
        os.close(self._fd)
        self.path.unlink()


def interleave(
    runners: Mapping[str, Callable[[int], None]], total: int, block: int
) -> dict[str, float]:
    """Run every runner for ``total`` operations, alternating in blocks; return ops/s of each.

    ``runner(k)`` performs k operations. Alternating blocks (rotating which goes
    first) exposes all runners to the same moments of a noisy shared machine.
    """
    spent = dict.fromkeys(runners, 0.0)
    order = list(runners)
    done = 0
    while done < total:
        step = min(block, total - done)
        for name in order:
            started = time.perf_counter()
            runners[name](step)
            spent[name] += time.perf_counter() - started
        order = order[1:] + order[:1]
        done += step
    return {name: total / seconds for name, seconds in spent.items()}


def median(values: Sequence[float]) -> float:
    """Return the median (0.0 for no values)."""
    return float(statistics.median(values)) if values else 0.0


def percentile(values: Sequence[float], pct: float) -> float:
    """Return the ``pct`` percentile by nearest rank (0.0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


def rate(value: float) -> str:
    """Format operations per second."""
    if value >= 10_000:
        return f"{value:,.0f}/s"
    return f"{value:,.1f}/s"


def ms(seconds: float) -> str:
    """Format a duration in milliseconds."""
    return f"{seconds * 1000:.2f} ms"


def times(ratio: float) -> str:
    """Format a ratio."""
    return f"{ratio:.2f}x"


def ratio_row(measure: str, pairs: Sequence[tuple[float, float]], goal: float) -> Row:
    """Return the row of (ours, theirs) rates per repetition: medians, median ratio vs ``goal``."""
    ratio = median([ours / theirs for ours, theirs in pairs])
    return Row(
        measure,
        rate(median([ours for ours, _ in pairs])),
        rate(median([theirs for _, theirs in pairs])),
        times(ratio),
        f">= {goal}x",
        ratio >= goal,
    )


def not_measured(measure: str, goal: str, why: str) -> Row:
    """Return a row that says honestly why it has no figure."""
    return Row(measure, f"not measured: {why}", "—", "—", goal, None)


def emit(result: Result, args: argparse.Namespace) -> None:
    """Print the rows and write the JSON file when ``--json`` was given."""
    print(f"== {result.title}  sizes={result.sizes}")
    for row in result.rows:
        verdict = {True: "met", False: "MISSED", None: "-"}[row.met]
        print(
            f"  {row.measure}: ours {row.ours} | baseline {row.baseline} | "
            f"ratio {row.ratio} | goal {row.goal} [{verdict}]"
        )
        if row.note:
            print(f"    note: {row.note}")
    for note in result.notes:
        print(f"  * {note}")
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_json(), indent=2), encoding="utf-8")


def event_text(index: int) -> str:
    """Return text that makes an encoded bench event about 200 bytes long."""
    return (
        f"assistant output chunk {index:08d} " + "lorem ipsum dolor sit amet " * 3 + "consectetur "
    )
