"""Pure presentation helpers of the viewer: times, durations, record summaries, parts.

Nothing here builds HTML: templates escape every value (Jinja autoescape), and
the live timeline builds its rows with ``textContent``. These helpers only turn
stored values into short display strings and plain data.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlstore import clock
from sqlstore.model import Part

SUMMARY_MAX_CHARS = 160
"""Longest one-line summary of a record in the timeline."""

IMAGE_INLINE_MAX_BYTES = 4 * 1024 * 1024
"""Largest image part shown inline (as a ``data:`` URL); larger ones are described."""

BODY_MAX_CHARS = 64 * 1024
"""Longest stored text one field of a page shows (record bodies, message texts, tool
arguments and results): a page of megabyte records stays small."""

INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Raster types shown inline. SVG is never inlined (it is a document, not a picture)."""


def utc_text(moment: datetime | None) -> str:
    """Return ``2026-12-01 19:48:31 UTC`` (seconds precision), or ``-``."""
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso(moment: datetime | None) -> str:
    """Return the RFC 3339 form for a ``<time datetime>`` attribute (empty for None)."""
    return "" if moment is None else clock.format_rfc3339(moment)


def duration_text(micros: int) -> str:
    """Return a duration in microseconds as ``850 µs``, ``12.5 ms`` or ``3.20 s``."""
    if micros < 1_000:
        return f"{micros} µs"
    if micros < 1_000_000:
        return f"{micros / 1_000:.1f} ms"
    return f"{micros / 1_000_000:.2f} s"


def human_bytes(size: int) -> str:
    """Return a byte count as ``512 B``, ``1.5 KiB``, ``3.2 MiB``..."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def one_line(text: str, max_chars: int = SUMMARY_MAX_CHARS) -> str:
    """Fold whitespace to single spaces and cut to ``max_chars`` (ending with "…")."""
    line = " ".join(text.split())
    return line if len(line) <= max_chars else line[: max_chars - 1] + "…"


def pretty_json(text: str) -> str:
    """Return JSON text indented for reading; text that is not JSON comes back unchanged."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def json_text(value: Any) -> str:
    """Return a JSON value as indented text (escaped by the template like any text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


SUMMARY_KEYS = ("role", "type", "name", "author", "text", "content", "output", "error")
"""Keys whose values lead a record's summary, wherever they sit in its data."""

SUMMARY_FIELDS = 5
"""Fields of ``data`` a summary shows at most."""


def _leaves(value: Any, key: str, depth: int, out: list[tuple[str, str]]) -> None:
    """Collect (key, scalar text) pairs of a JSON value, breadth-limited, depth-first."""
    if len(out) >= 4 * SUMMARY_FIELDS or depth > 4:
        return
    if isinstance(value, dict):
        for sub, item in list(value.items())[:12]:
            _leaves(item, str(sub), depth + 1, out)
    elif isinstance(value, list):
        for item in value[:4]:
            _leaves(item, key, depth + 1, out)
    elif value is not None and value != "":
        out.append((key, str(value)))


def record_summary(is_gap: bool, body: dict[str, Any] | str) -> str:
    """Return the one-line summary of a log record for the timeline.

    Generic by design, so the events of every integration read well without a
    renderer of their own: the record's ``text``, then a tool call or result, else
    the scalar fields found in ``data`` (nested items too, as an OpenAI Agents item
    or an ADK event carries them), those named role, type, name, text, content,
    output or error first.
    """
    if is_gap or isinstance(body, str):
        return f"gap: {one_line(str(body))}"
    text = str(body.get("text") or "")
    data = body.get("data")
    bits: list[str] = [text] if text else []
    if isinstance(data, dict):
        call = data.get("call")
        result = data.get("result")
        if isinstance(call, dict):
            bits.append(f"{call.get('name', '')}({one_line(str(call.get('args', '')), 80)})")
        elif isinstance(result, dict):
            flag = "error: " if result.get("is_error") else ""
            bits.append(flag + str(result.get("content", "")))
        else:
            leaves: list[tuple[str, str]] = []
            _leaves(data, "", 0, leaves)
            leaves.sort(key=lambda kv: kv[0] not in SUMMARY_KEYS)  # stable: keeps order
            bits += [f"{k}={v}" if k else v for k, v in leaves[:SUMMARY_FIELDS]]
    return one_line(" · ".join(bits))


@dataclass(frozen=True, slots=True)
class PartView:
    """How a message part is shown: an inline image (``src``) or a description."""

    kind: str
    mime_type: str
    size: int
    src: str  # a data: URL for an inline image, else ""
    url: str  # an external URL, shown as text (never fetched, never a link)


def part_view(part: Part) -> PartView:
    """Return the display form of a part; only raster images of bounded size are inlined."""
    src = ""
    mime = part.mime_type.lower().split(";")[0].strip()
    if part.data and mime in INLINE_IMAGE_TYPES and len(part.data) <= IMAGE_INLINE_MAX_BYTES:
        src = f"data:{mime};base64,{base64.b64encode(part.data).decode('ascii')}"
    return PartView(part.kind, part.mime_type, len(part.data), src, part.url)


def record_row(
    pos: int, is_gap: bool, etype: str, at: datetime | None, body: Any, cursor: str
) -> dict[str, Any]:
    """Return the plain data of one timeline row (the live stream sends this as JSON)."""
    return {
        "pos": pos,
        "gap": is_gap,
        "type": "gap" if is_gap else etype,
        "at": iso(at),
        "at_text": utc_text(at),
        "summary": record_summary(is_gap, body),
        "body": clip(body if isinstance(body, str) else json_text(body)),
        "cursor": cursor,
    }


def clip(text: str, max_chars: int = BODY_MAX_CHARS) -> str:
    """Return ``text`` cut to ``max_chars``, saying how much was left out."""
    if len(text) <= max_chars:
        return text
    rest = len(text) - max_chars
    return f"{text[:max_chars]}\n… ({rest} more characters not shown; the CLI prints them whole)"
