"""Human output helpers for the CLI: aligned tables, short times, byte sizes, one-line text.

Everything here is pure (strings in, strings out) so commands stay thin and the
formatting is testable without a store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from datetime import datetime

import click

from sqlstore import clock
from sqlstore.audit import ToolCallRecord
from sqlstore.inventory import Orphan, SessionMeta
from sqlstore.model import Message, Principal, Relationship
from sqlstore.session import Session

CELL_MAX_CHARS = 60
"""Longest cell a table prints; longer text is cut and ends with "…"."""


_CONTROL_NAMES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible(text: str) -> str:
    """Return ``text`` with control characters shown as escapes (``\\n``, ``\\x1b``, ...).

    Stored text is printed on one line and can never move the cursor or send a
    terminal escape sequence.
    """
    if text.isprintable():
        return text
    return "".join(
        ch
        if ch.isprintable() or ch == " "
        else _CONTROL_NAMES.get(ch) or ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


# DEL, C1 controls, line/paragraph separators, and the bidi controls that reorder what a
# terminal shows (U+061C, U+200E/F, U+202A-E, U+2066-9): `visible` escapes them in tables too.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def json_text(doc: object, *, indent: int | None = None) -> str:
    """Encode ``doc`` as JSON that is safe on a terminal.

    ``json.dumps(ensure_ascii=False)`` escapes C0 controls but leaves DEL, the C1
    controls (``\\x9b`` is CSI on many terminals) and the bidi controls (they reorder
    what the terminal shows) raw; they are escaped as ``\\uNNNN`` here, which is the
    same JSON value.
    """
    separators = None if indent else (",", ":")
    text = json.dumps(doc, ensure_ascii=False, indent=indent, separators=separators)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def echo(line: str, *, err: bool = False) -> None:
    """Print one line of human output with every control character escaped.

    The last line of defence: whatever a command prints (stored ids, titles,
    tool names, file names, error texts) can never send a terminal escape.
    """
    click.echo(visible(line), err=err)


def one_line(text: str, max_chars: int = CELL_MAX_CHARS) -> str:
    """Fold ``text`` to one line and cut it to ``max_chars`` characters (ending with "…").

    Runs of whitespace become one space; other control characters are escaped.
    """
    line = visible(" ".join(text.split()))
    if max_chars > 0 and len(line) > max_chars:
        return line[: max_chars - 1] + "…"
    return line


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Iterator[str]:
    """Yield the lines of a left-aligned text table with a header row."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    yield line(headers)
    for row in rows:
        yield line(row)


def short_time(moment: datetime | None) -> str:
    """Format a time as ``YYYY-MM-DD HH:MM:SS`` UTC (empty for None)."""
    if moment is None:
        return ""
    return clock.format_rfc3339(moment)[:19].replace("T", " ")


def human_bytes(size: int) -> str:
    """Format a byte count with a binary unit (``512 B``, ``1.5 KiB``, ``3.0 MiB``)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def owner_text(owner: Principal | None) -> str:
    """Format an owner as ``subject`` or ``subject@issuer`` (empty when none)."""
    if owner is None:
        return ""
    return f"{owner.subject}@{owner.issuer}" if owner.issuer else owner.subject


def relationship_text(rel: Relationship) -> str:
    """Format the non-empty fields of a relationship as ``key=value`` pairs."""
    doc = rel.to_json()
    return " ".join(f"{k}={v}" for k, v in doc.items() if v not in ("", None))


def session_rows(rows: Sequence[SessionMeta]) -> Iterator[str]:
    """Yield the ``sqlstore ls`` table for inventory rows."""
    body = [
        [
            one_line(m.id, 0),  # never cut: the id is what `show` needs
            str(m.state),
            str(m.kind),
            short_time(m.modified_at),
            str(m.turns),
            human_bytes(m.estimated_bytes),
            one_line(m.title, 50),
        ]
        for m in rows
    ]
    return table(["ID", "STATE", "KIND", "MODIFIED (UTC)", "TURNS", "SIZE", "TITLE"], body)


def orphan_rows(orphans: Sequence[Orphan]) -> Iterator[str]:
    """Yield the ``sqlstore ls --orphans`` table: ids with events or audit rows, no snapshot."""
    body = [
        [one_line(o.id, 0), short_time(o.modified_at), str(o.records), str(o.audit_rows)]
        for o in orphans
    ]
    return table(["ID", "LAST WRITE (UTC)", "RECORDS", "AUDIT ROWS"], body)


def audit_rows(records: Sequence[ToolCallRecord]) -> Iterator[str]:
    """Yield the ``sqlstore audit`` table."""
    body = [
        [
            short_time(r.at),
            visible(r.tool),
            visible(r.call_id),
            "error" if r.is_error else "ok",
            f"{r.took_us / 1000:.1f} ms",
            one_line(r.args, 40),
            one_line(r.result, 40),
        ]
        for r in records
    ]
    return table(["AT (UTC)", "TOOL", "CALL", "STATUS", "TOOK", "ARGS", "RESULT"], body)


def session_summary(session: Session, meta: SessionMeta | None) -> Iterator[str]:
    """Yield ``key: value`` lines summarising a session (the head of ``sqlstore show``)."""
    fields: list[tuple[str, str]] = [
        ("id", session.id),
        ("title", session.title),
        ("state", str(session.state)),
        ("kind", str(session.kind)),
        ("relationship", relationship_text(session.relationship)),
        ("owner", owner_text(session.owner)),
        ("mode", session.mode),
        ("model", "/".join(p for p in (session.provider_id, session.model_id) if p)),
        ("created", short_time(session.created_at)),
        ("modified", short_time(meta.modified_at) if meta else ""),
        ("version", str(meta.version) if meta else ""),
        ("turns", str(session.counters.turns)),
        ("tool calls", str(session.counters.tool_calls)),
        ("usage", usage_text(session)),
        ("stop reason", session.stop_reason),
        ("last error", session.last_error),
        ("pending ask", "" if session.pending_ask is None else _ask_text(session)),
        ("run id", session.run_id),
        ("labels", " ".join(f"{k}={v}" for k, v in sorted(session.labels.items()))),
        ("messages", str(len(session.messages))),
    ]
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        if value:
            yield f"{key.ljust(width)}  {visible(value)}"


def usage_text(session: Session) -> str:
    """Format the non-zero token counters of a session's usage."""
    doc = session.usage.to_json()
    return " ".join(f"{k.removesuffix('_tokens')}={v}" for k, v in doc.items() if v)


def _ask_text(session: Session) -> str:
    ask = session.pending_ask
    assert ask is not None
    return f"{ask.tool} {one_line(ask.args, 80)} ({ask.reason})" if ask.reason else ask.tool


def conversation(messages: Sequence[Message]) -> Iterator[str]:
    """Yield a readable transcript: one block per message, tool calls and results indented."""
    for index, msg in enumerate(messages, start=1):
        yield ""
        yield f"[{index}] {visible(msg.role)}"
        if msg.reasoning:
            yield f"  (reasoning) {one_line(msg.reasoning, 200)}"
        for text_line in msg.text.splitlines():
            yield f"  {visible(text_line)}"
        for part in msg.parts:
            where = visible(part.url) if part.url else f"{len(part.data)} bytes"
            yield f"  [{visible(part.kind or 'part')} {visible(part.mime_type)} {where}]"
        for call in msg.tool_calls:
            yield f"  -> {visible(call.name)}({one_line(call.args, 200)})  id={visible(call.id)}"
        if msg.tool_result is not None:
            res = msg.tool_result
            flag = " ERROR" if res.is_error else ""
            yield f"  <- {visible(res.call_id)}{flag}: {one_line(res.content, 200)}"


def json_line(doc: object) -> str:
    """Encode one compact JSON Lines record (terminal-safe, see :func:`json_text`)."""
    return json_text(doc)
