"""Tolerant JSON Lines parsing shared by the run-log reader and the importers.

A line counts only once it ends with ``\\n``: a final line without one is a torn
write from a crash, ignored and reported. A complete line that is not valid JSON
is skipped and reported with its file and line number; reading goes on. Blank
lines are skipped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlstore.model import JSON


@dataclass(frozen=True, slots=True)
class LineProblem:
    """Something wrong with one line of a file, reported as ``file:line: reason``."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(slots=True)
class JsonlLines:
    """The decoded lines of one JSONL file and what was wrong with it."""

    lines: list[tuple[int, JSON]] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    torn: bool = False


TORN_LINE_REASON = "torn final line (no trailing newline) ignored"


def parse_jsonl(data: bytes, path: str) -> JsonlLines:
    """Decode ``data`` line by line; ``path`` names the file in problem reports.

    Returns every complete, non-blank line that is valid JSON with its 1-based
    line number; malformed lines and a torn final line become problems.
    """
    out = JsonlLines()
    chunks = data.split(b"\n")
    tail = chunks.pop()  # the bytes after the last newline (b"" for a clean file)
    for number, raw in enumerate(chunks, start=1):
        if not raw.strip():
            continue
        try:
            out.lines.append((number, json.loads(raw)))
        except (ValueError, RecursionError) as exc:
            out.problems.append(LineProblem(path, number, f"malformed line skipped: {exc}"))
    if tail.strip():
        out.torn = True
        out.problems.append(LineProblem(path, len(chunks) + 1, TORN_LINE_REASON))
    return out


def dumps_line(value: JSON) -> bytes:
    """Encode one JSONL line: compact UTF-8 JSON followed by ``\\n``."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"
