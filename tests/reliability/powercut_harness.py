"""Run a power-cut scenario end to end: record, replay into images, check, apply the rules.

1. :func:`record` runs the workload (``powercut_child.py``) in a child process
   under the recording VFS and loads its trace.
2. :func:`run` chooses cut points (:func:`powercut.cut_points`), materialises each
   in every mode of :data:`powercut.MODES`, writes each distinct image once and
   hands them, :data:`BATCH` at a time, to a fresh ``powercut_check.py`` process
   (up to :data:`PARALLEL` at once, while the next batch is built).
3. Every image gets :func:`powercut_rules.basic` and the scenario's rule; the
   :class:`Outcome` lists each violation with its cut point and mode.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.reliability.helpers import child_env
from tests.reliability.powercut import MODES, Replay, cut_points, digest
from tests.reliability.powercut_rules import Timeline, basic

HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "powercut_child.py"
CHECKER = HERE / "powercut_check.py"
DB = "store.db"
BATCH = 120
"""Images per checker process."""
PARALLEL = 2
"""Checker processes running at once (the machine has two cores)."""

Rule = Callable[[Timeline, int, dict[str, Any], dict[str, Any]], list[str]]


@dataclass
class Outcome:
    """What one scenario run checked and found."""

    scenario: str
    trace_entries: int
    calls: int
    cuts: int
    images: int
    distinct: int
    violations: list[tuple[int, str, str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line for logs and docs."""
        return (
            f"{self.scenario}: {self.trace_entries} trace entries, {self.calls} calls, "
            f"{self.cuts} cut points, {self.images} images ({self.distinct} distinct), "
            f"{len(self.violations)} violations"
        )

    def report(self, limit: int = 8) -> str:
        """The summary and the first violations, for an assertion message."""
        lines = [self.summary()]
        lines += [f"  cut {cut} {mode}: {what}" for cut, mode, what in self.violations[:limit]]
        return "\n".join(lines)


def record(scenario: str, workdir: Path, *args: str) -> dict[str, Any]:
    """Run ``scenario`` under the recording VFS in a child process; return its recording."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, str(WORKLOADS), scenario, str(workdir), *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
    )
    assert proc.returncode == 0, f"workload {scenario} failed:\n{proc.stderr[-4000:]}"
    with open(workdir / "trace.pkl", "rb") as handle:
        recording: dict[str, Any] = pickle.load(handle)
    return recording


class _Checker:
    """Batches of images, each checked by a fresh process while the next is built."""

    def __init__(self, scratch: Path, resume: dict[str, str] | None) -> None:
        self.scratch = scratch
        self.resume = resume
        self.batch: list[dict[str, Any]] = []
        self.running: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
        self.results: dict[str, dict[str, Any]] = {}
        self.count = 0

    def add(self, key: str, image: dict[str, bytes]) -> None:
        self.count += 1
        where = self.scratch / f"b{self.count // BATCH}" / f"i{self.count}"
        where.mkdir(parents=True)
        for name, content in image.items():
            (where / name).write_bytes(content)
        self.batch.append({"key": key, "dir": str(where), "db": DB, "resume": self.resume})
        if len(self.batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        while len(self.running) >= PARALLEL:
            self._collect()
        if not self.batch:
            return
        jobs = self.scratch / f"jobs{self.count}.json"
        out = self.scratch / f"out{self.count}.json"
        jobs.write_text(json.dumps(self.batch))
        proc = subprocess.Popen(
            [sys.executable, str(CHECKER), str(jobs), str(out)], env=child_env()
        )
        self.running.append((proc, jobs, out))
        self.batch = []

    def _collect(self) -> None:
        """Wait for the oldest running checker and take its results."""
        proc, jobs, out = self.running.pop(0)
        assert proc.wait(timeout=600) == 0, "the checker process failed"
        batch = json.loads(jobs.read_text())
        for result in json.loads(out.read_text()):
            self.results[result["key"]] = result
        for job in batch:
            shutil.rmtree(job["dir"], ignore_errors=True)

    def finish(self) -> dict[str, dict[str, Any]]:
        self.flush()
        while self.running:
            self._collect()
        return self.results


def _scratch(tmp: Path) -> Path:
    """Where images are written for checking: memory (``/dev/shm``) when there is one.

    The images are throw-away copies; opening them recovers and checkpoints the
    WAL, and real fsyncs there would only make the battery slow (the workload
    itself runs on a real disk with real fsyncs).
    """
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return Path(tempfile.mkdtemp(prefix="powercut-", dir="/dev/shm"))
    return tmp / "images"


def _check_images(
    recording: dict[str, Any], points: list[int], seed: int, draws: int, checker: _Checker
) -> dict[str, list[tuple[int, str]]]:
    """Materialise every cut point in every mode; hand each distinct image to ``checker``.

    Returns, per image digest, the (cut point, mode) pairs that gave it.
    """
    replay = Replay(recording)
    seen: dict[str, list[tuple[int, str]]] = {}
    known: dict[tuple[Any, ...], str] = {}
    for cut in points:
        replay.advance(cut)
        for mode in MODES:
            cheap = replay.key(mode)
            if cheap is not None and cheap in known:
                seen[known[cheap]].append((cut, mode))
                continue
            for draw in range(1 if cheap is not None else draws):
                image = replay.image(mode, random.Random(f"{seed}/{cut}/{mode}/{draw}"))
                key = digest(image)
                if cheap is not None:
                    known[cheap] = key
                if key not in seen:
                    seen[key] = []
                    checker.add(key, image)
                seen[key].append((cut, mode))
    return seen


def run(
    scenario: str,
    tmp: Path,
    rule: Rule,
    *,
    cuts: int = 200,
    seed: int = 0,
    draws: int = 1,
    args: tuple[str, ...] = (),
    resume: bool = False,
) -> Outcome:
    """Record ``scenario``, cut it at ``cuts`` points in every mode, check every image.

    The random modes (``prefix``, ``sector``) are drawn ``draws`` times per cut point.
    """
    recording = record(scenario, tmp / "work", *args)
    trace = recording["trace"]
    timeline = Timeline.of(trace)
    points = sorted(set(cut_points(trace, cuts, seed)) | {0})
    scratch = _scratch(tmp)
    try:
        checker = _Checker(scratch, {"source": args[0]} if resume else None)
        seen = _check_images(recording, points, seed, draws, checker)
        results = checker.finish()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    images = sum(len(where) for where in seen.values())
    base_key = next(key for key, where in seen.items() if (0, "synced/kept") in where)
    base = results[base_key]
    outcome = Outcome(scenario, len(trace), len(timeline.calls), len(points), images, len(seen))
    for key, where in seen.items():
        result = results[key]
        for cut, mode in where:
            for what in basic(result) + rule(timeline, cut, result, base):
                outcome.violations.append((cut, mode, what))
    outcome.violations.sort()
    if os.environ.get("POWERCUT_LOG"):
        with open(os.environ["POWERCUT_LOG"], "a", encoding="utf-8") as log:
            log.write(outcome.summary() + "\n")
    return outcome
