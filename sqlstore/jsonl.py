"""Tolerant JSON Lines parsing shared by the run-log reader and the importers.

A line counts only once it ends with ``\\n``: a final line without one is a torn
write from a crash, ignored and reported. A complete line that is not valid JSON
is skipped and reported with its file and line number; reading goes on. Blank
lines are skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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


# JSONDecoder.__init__ sets scan_once; typeshed's stub does not declare it.
_SCAN_ONCE: Callable[[str, int], tuple[JSON, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The scanner of a default decoder (the C one): what ``json.loads`` runs, minus its set-up."""

_JSON_WHITESPACE = " \t\n\r"


def loads_line(raw: bytes) -> JSON:
    """Decode one line exactly as ``json.loads(raw)`` does, faster for ordinary lines.

    The fast path decodes the bytes as UTF-8 and runs the decoder's scanner from
    the first character; it is taken only when one JSON value spans the whole
    line (JSON whitespace after it allowed). Such a line holds no NUL byte and no
    BOM, so ``json.loads`` would have read it as UTF-8 too and returned the same
    value. Anything else (leading whitespace, a BOM, bad UTF-8, an error) goes
    through ``json.loads`` itself, which gives the result or the exact error.

    Raises:
        ValueError: the line is not valid JSON (as ``json.loads`` raises it).
        RecursionError: the value nests too deeply.
    """
    try:
        text = raw.decode("utf-8")
        value, end = _SCAN_ONCE(text, 0)
    except (StopIteration, ValueError, RecursionError):
        return json.loads(raw)
    if end != len(text) and text[end:].strip(_JSON_WHITESPACE):
        return json.loads(raw)
    return value


def parse_jsonl(data: bytes, path: str) -> JsonlLines:
    """Decode ``data`` line by line; ``path`` names the file in problem reports.

    Returns every complete, non-blank line that is valid JSON with its 1-based
    line number; malformed lines and a torn final line become problems. Each
    line decodes to what ``json.loads`` gives for it (see :func:`loads_line`).
    """
    out = JsonlLines()
    chunks = data.split(b"\n")
    tail = chunks.pop()  # the bytes after the last newline (b"" for a clean file)
    append = out.lines.append
    for number, raw in enumerate(chunks, start=1):
        if not raw.strip():
            continue
        try:
            append((number, loads_line(raw)))
        except (ValueError, RecursionError) as exc:
            out.problems.append(LineProblem(path, number, f"malformed line skipped: {exc}"))
    if tail.strip():
        out.torn = True
        out.problems.append(LineProblem(path, len(chunks) + 1, TORN_LINE_REASON))
    return out


def canonical_json(value: object) -> str:
    """Return compact, key-sorted JSON text: equal values give equal text (stored keys, hashes)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dumps_line(value: JSON) -> bytes:
    """Encode one JSONL line: compact UTF-8 JSON followed by ``\\n``."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"
