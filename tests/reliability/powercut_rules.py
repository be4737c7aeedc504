"""What a recovered power-cut image must satisfy, given the trace up to the cut.

Each rule takes the :class:`Timeline` of a recording, the cut point and the
checker's result for the image, and returns the violations it finds (empty when
the image is acceptable). Every image must also pass :func:`basic`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from tests.reliability.powercut_state import EMPTY


@dataclass
class Call:
    """One bracketed library call of the trace."""

    number: int
    kind: str
    info: dict[str, Any]
    start: int
    end: int = 1 << 62
    ack: dict[str, Any] | None = None
    failed: bool = False

    def acked_by(self, cut: int) -> bool:
        """True when the call returned successfully before the cut."""
        return self.ack is not None and self.end < cut

    def started_by(self, cut: int) -> bool:
        """True when the call had started before the cut."""
        return self.start < cut


@dataclass
class Timeline:
    """The calls and marks of a trace, indexed for cut-point questions."""

    calls: list[Call] = field(default_factory=list)
    states: list[tuple[int, str]] = field(default_factory=list)
    marks: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def of(cls, trace: list[tuple[Any, ...]]) -> Timeline:
        """Index ``trace``."""
        out = cls()
        by_number: dict[int, Call] = {}
        last_ack = 0
        for pos, entry in enumerate(trace):
            if entry[0] == "start":
                by_number[entry[1]] = call = Call(entry[1], entry[2], entry[3], pos)
                out.calls.append(call)
            elif entry[0] == "ack":
                last_ack = pos
                by_number[entry[1]].end = pos
                by_number[entry[1]].ack = entry[2]
            elif entry[0] == "fail":
                by_number[entry[1]].end = pos
                by_number[entry[1]].failed = True
            elif entry[0] == "mark" and entry[1] == "state":
                # The state of the call just acknowledged (no I/O comes in between).
                out.states.append((last_ack, entry[2]["digest"]))
            elif entry[0] == "mark":
                out.marks[entry[1]] = (pos, entry[2])
        return out

    def in_flight(self, cut: int) -> bool:
        """True when some call had started but not returned at the cut."""
        return any(c.start < cut <= c.end for c in self.calls)


def basic(result: dict[str, Any]) -> list[str]:
    """The file passes ``integrity_check`` and ``SQLiteStore`` opens it."""
    out = []
    if result.get("integrity") != "ok":
        out.append(f"integrity_check: {result.get('integrity')}")
    if "open_error" in result:
        out.append(f"SQLiteStore could not open it: {result['open_error']}")
    return out


def sequential(
    tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any], *, durable: bool
) -> list[str]:
    """The image holds the state after some call, as durability allows.

    ``base`` is the check of the starting files (the state before the first call).
    ``durable`` (``durability="full"``): the state after the last acknowledged
    call, or after the call in flight. Otherwise (``"normal"``): the state after
    any call since the last acknowledged ``barrier`` call (a close, which
    checkpoints), up to the call in flight — a lost suffix, never a mix.
    """
    positions = [pos for pos, _ in tl.states]
    here = bisect.bisect_left(positions, cut)
    history = [base.get("digest", EMPTY)] + [digest for _, digest in tl.states[:here]]
    allowed = {history[-1]}
    if not durable:
        barrier = max(
            (c.end for c in tl.calls if c.info.get("barrier") and c.acked_by(cut)), default=-1
        )
        first = bisect.bisect_left(positions, barrier)
        allowed.update(history[first + 1 :] if barrier >= 0 else history)
    if tl.in_flight(cut) and here < len(tl.states):
        allowed.add(tl.states[here][1])
    got = result.get("digest")
    if got in allowed:
        return []
    if got in history:
        back = len(history) - 1 - history.index(got)
        return [f"holds the state of {back} acknowledged call(s) earlier: acknowledged writes lost"]
    return ["holds a state that no sequence of whole calls produced"]


APPENDING = ("append", "append_events", "apply")
"""Calls that add events to a log; ``info["tags"]`` (a batch) or ``info["tag"]``."""


def _tags(call: Call) -> list[str]:
    if "tags" in call.info:
        return [str(t) for t in call.info["tags"]]
    return [str(call.info.get("tag", f"{call.info.get('seq')}:"))]


def logs(
    tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any], *, durable: bool = True
) -> list[str]:
    """Each appended log is its starting events plus a gap-free prefix of its appends.

    A batch (``append_events``, ``apply``) is all there or not at all. Nothing not
    yet started is in the log; with ``durable`` (full durability) every append
    acknowledged before the cut is.
    """
    out = []
    by_sid: dict[str, list[Call]] = {}
    for call in tl.calls:
        if call.kind in APPENDING and not call.failed:
            by_sid.setdefault(call.info["sid"], []).append(call)
    for sid, calls in by_sid.items():
        before = base.get("sessions", {}).get(sid, {}).get("events", [])
        found = result["sessions"].get(sid, {}).get("events", [])
        tags = [tag for c in calls for tag in _tags(c)]
        bounds = {0}
        total = 0
        for c in calls:
            total += len(_tags(c))
            bounds.add(total)
        acked = sum(len(_tags(c)) for c in calls if c.acked_by(cut))
        started = sum(len(_tags(c)) for c in calls if c.started_by(cut))
        n = len(found) - len(before)
        if found[: len(before)] != before or found[len(before) :] != tags[: max(n, 0)]:
            out.append(f"log {sid}: {found} is not its events plus a prefix of {tags}")
        elif n not in bounds:
            out.append(f"log {sid}: {n} appended events, which ends inside a batch")
        elif durable and n < acked:
            out.append(f"log {sid}: {acked} appends acknowledged, {n} survived")
        elif n > started:
            out.append(f"log {sid}: {n} appends present, only {started} started")
    return out


def creates(tl: Timeline, cut: int, result: dict[str, Any]) -> list[str]:
    """A created session is whole; the acknowledged creator's is there; none came from nowhere."""
    out = []
    by_sid: dict[str, list[Call]] = {}
    for call in tl.calls:
        if call.kind == "create":
            by_sid.setdefault(call.info["sid"], []).append(call)
    for sid, calls in by_sid.items():
        found = result["sessions"].get(sid)
        winners = [c for c in calls if c.acked_by(cut)]
        if found is None:
            if winners:
                out.append(f"{sid}: create acknowledged ({winners[0].info}) but it is gone")
            continue
        titles = {c.info.get("title") for c in calls if c.started_by(cut)}
        if found["row"] is None or found["snapshot"] is None:
            out.append(f"{sid}: half a session ({found})")
        elif "title" in calls[0].info and found["title"] not in titles:
            out.append(f"{sid}: created by {found['title']!r}, no such call had started")
        elif winners and "title" in winners[0].info and found["title"] != winners[0].info["title"]:
            out.append(
                f"{sid}: {winners[0].info['title']!r} acknowledged, {found['title']!r} stored"
            )
    return out


def whole_or_gone(
    tl: Timeline, cut: int, result: dict[str, Any], base: dict[str, Any]
) -> list[str]:
    """Each starting session is exactly as it was (apart from appends) or entirely gone.

    Sessions the sweep reported deleted are gone once it returned; sessions it
    was not allowed to delete (not planned) are never gone.
    """
    out = []
    appended = {c.info["sid"] for c in tl.calls if c.kind == "append"}
    planned = set(tl.marks.get("planned", (0, {"ids": []}))[1]["ids"])
    sweeps = [c for c in tl.calls if c.kind == "sweep" and c.acked_by(cut)]
    reported = {sid for c in sweeps for sid in (c.ack or {}).get("deleted", [])}
    for sid, was in base["sessions"].items():
        found = result["sessions"].get(sid)
        if found is None:
            if sid not in planned:
                out.append(f"{sid}: was never to be deleted, and is gone")
            continue
        if sid in reported:
            out.append(f"{sid}: the sweep returned reporting it deleted, but it is there")
        keys = ("snapshot", "audit", "title") if sid in appended else tuple(was)
        for key in keys:
            if found[key] != was[key] and not (key == "events" and sid in appended):
                out.append(f"{sid}: half-deleted or changed ({key}: {was[key]} → {found[key]})")
                break
    return out


def migrated(tl: Timeline, cut: int, result: dict[str, Any]) -> list[str]:
    """Resuming the import on the image gives exactly the uninterrupted run's content."""
    reference = tl.marks["content"][1]["digest"]
    out = []
    resumed = result.get("resumed", {})
    if resumed.get("failed"):
        out.append(f"resumed import failed {resumed['failed']} item(s)")
    if result.get("content") != reference:
        out.append("resumed import differs from an uninterrupted run")
    done = [c for c in tl.calls if c.kind == "migrate" and c.acked_by(cut)]
    if done and resumed.get("imported"):
        out.append(f"import had returned, yet {resumed['imported']} item(s) were imported again")
    return out


def units(tl: Timeline, cut: int, result: dict[str, Any]) -> list[str]:
    """An ``apply`` unit's audit rows are all there or none, and exactly when its events are."""
    out = []
    for call in tl.calls:
        if call.kind != "apply" or call.failed:
            continue
        found = result["sessions"].get(call.info["sid"], {"events": [], "audit": []})
        audit = [a for a in call.info["audit"] if a in found["audit"]]
        events = [t for t in call.info["tags"] if t in found["events"]]
        if len(audit) not in (0, len(call.info["audit"])):
            out.append(f"apply {call.info['sid']}: {len(audit)} of its audit rows there")
        elif bool(audit) != bool(events):
            out.append(f"apply {call.info['sid']}: audit rows {audit}, events {events}")
    return out
