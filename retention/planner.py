"""The retention planner: which sessions a policy deletes, and why.

:func:`plan_rows` is pure (no I/O, no clock): it takes inventory rows, a
policy, ``now`` and the protected ids, and returns a :class:`Plan`.
:func:`plan` feeds it a store's inventory stream and the ids with a live lease.

Rules (mecatl planner, SPEC §7):

* Candidates are sessions in ``idle``, ``completed``, ``failed`` or
  ``cancelled``. Never selected, checked in this order: an unknown kind, an
  invalid kind/relationship pair or an unknown state (``unknown_kind``);
  ``running`` or ``awaiting`` (``active_state``); an explicitly protected id
  (``protected``); an id with a live lease (``leased``).
* Partitions: ``main`` (policy.main), ``scheduled`` (policy.scheduled), and one
  partition per child kind — subagent, parallel_branch, team_member — each
  with policy.child, so ``max_count`` caps each family on its own.
* Age pass: a candidate whose ``modified_at < now - max_age`` (max_age > 0) is
  selected with reason ``age``.
* Cap pass: when more than ``max_count`` (> 0) candidates survive the age pass,
  the oldest excess ones are selected with reason ``cap``. Only candidates
  count toward the cap: running, awaiting, leased and protected sessions are
  neither counted nor deleted (as in mecatl §9.2, "survivors" are the
  candidates the age pass kept). So a family may hold more than ``max_count``
  sessions while some of them are active.
* Order: oldest first by (modified_at, id), ids compared by code point (the
  same order as their UTF-8 bytes, which is how SQLite sorts them).

Memory: rows are consumed one at a time and in any order. The age pass keeps
only selected rows; the cap pass keeps, per partition, a heap of the newest
``max_count`` survivors seen so far — a row pushed out of it has at least
``max_count`` newer survivors, so it is in the excess whatever comes later.
Memory is therefore bounded by the selected entries plus ``max_count`` per
partition, never by the number of rows.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlstore import clock
from sqlstore.errors import InvalidSessionMetadata
from sqlstore.inventory import SessionMeta
from sqlstore.model import Kind, State, validate_kind
from sqlstore.ports import Store

from .policy import Policy, Rule

Reason = Literal["age", "cap"]
"""Why a session is in a plan."""

CANDIDATE_STATES = frozenset({State.IDLE, State.COMPLETED, State.FAILED, State.CANCELLED})
ACTIVE_STATES = frozenset({State.RUNNING, State.AWAITING})
PROTECTION_REASONS = ("unknown_kind", "active_state", "protected", "leased")
"""Why a row is never selected, in the order the planner checks them."""

GENERATION_VERSION = "retention-plan/1"
_MOD_256 = 1 << 256


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One session to delete: the inventory row it was planned from, and why."""

    meta: SessionMeta
    reason: Reason

    def to_json(self) -> dict[str, Any]:
        """Return the entry as the JSON row the CLI prints."""
        return {
            "id": self.meta.id,
            "kind": str(self.meta.kind),
            "state": str(self.meta.state),
            "modified_at": clock.format_rfc3339(self.meta.modified_at),
            "version": self.meta.version,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class PlanCounts:
    """How many entries a plan has, in total and by kind, state and reason."""

    total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    by_state: dict[str, int] = field(default_factory=dict)
    by_reason: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the counts as JSON (keys sorted)."""
        return {
            "total": self.total,
            "by_kind": dict(sorted(self.by_kind.items())),
            "by_state": dict(sorted(self.by_state.items())),
            "by_reason": dict(sorted(self.by_reason.items())),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """The exact sessions a policy deletes at ``now``, oldest first.

    ``generation`` is a stable hex sha256 over the rows seen (id, modified_at,
    version, state, kind, and whether the row was protected or leased), the
    policy, and the plan format; the same inventory, policy and protections
    give the same generation whatever order the rows came in. ``now`` is not
    part of it (it identifies the input, as in mecatl). ``protected`` counts
    the rows never selected, by reason (see :data:`PROTECTION_REASONS`).
    """

    entries: list[PlanEntry]
    counts: PlanCounts
    generation: str
    policy: Policy
    now: datetime
    scanned: int = 0
    protected: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the whole plan as JSON-compatible data."""
        return {
            "generation": self.generation,
            "policy_hash": self.policy.policy_hash,
            "now": clock.format_rfc3339(self.now),
            "scanned": self.scanned,
            "protected": {r: self.protected.get(r, 0) for r in PROTECTION_REASONS},
            "counts": self.counts.to_json(),
            "entries": [entry.to_json() for entry in self.entries],
        }


def _protection(meta: SessionMeta, protected: Collection[str], leased: Collection[str]) -> str:
    """Return why ``meta`` can never be selected, or ``""`` when it is a candidate."""
    try:
        kind = Kind(meta.kind)
        state = State(meta.state)
        validate_kind(kind, meta.relationship)
    except (ValueError, InvalidSessionMetadata):
        return "unknown_kind"
    if kind is Kind.UNKNOWN:
        return "unknown_kind"
    if state in ACTIVE_STATES:
        return "active_state"
    if state not in CANDIDATE_STATES:
        return "unknown_kind"
    if meta.id in protected:
        return "protected"
    if meta.id in leased:
        return "leased"
    return ""


def _row_digest(meta: SessionMeta, protection: str) -> int:
    text = "\x00".join(
        (
            meta.id,
            str(clock.to_ns(meta.modified_at)),
            str(meta.version),
            str(meta.state),
            str(meta.kind),
            protection,
        )
    )
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest(), "big")


def _order_key(meta: SessionMeta) -> tuple[datetime, str]:
    return (meta.modified_at, meta.id)


def age_cutoff(now: datetime, max_age: timedelta) -> datetime:
    """Return ``now - max_age``; an age reaching before year 1 gives the earliest instant.

    No session can be older than that, so such a rule selects nothing by age
    (instead of overflowing).
    """
    try:
        return now - max_age
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def plan_rows(
    rows: Iterable[SessionMeta],
    policy: Policy,
    now: datetime,
    protected: Collection[str] = (),
    *,
    leased: Collection[str] = (),
) -> Plan:
    """Return the plan of ``policy`` over ``rows`` at ``now`` (pure; see the module doc).

    Args:
        rows: inventory rows, in any order; consumed once, one at a time.
        policy: the retention policy.
        now: the reference time of the age pass (aware UTC).
        protected: ids never to select (counted as ``protected``).
        leased: ids with a live lease (counted as ``leased``).

    Raises:
        ValueError: ``now`` is naive.
    """
    if now.tzinfo is None:
        raise ValueError("naive datetime: retention needs a timezone-aware `now`")
    protected_ids = protected if isinstance(protected, (set, frozenset)) else frozenset(protected)
    leased_ids = leased if isinstance(leased, (set, frozenset)) else frozenset(leased)
    cutoffs: dict[Kind, datetime | None] = {}
    rules: dict[Kind, Rule | None] = {}
    for kind in Kind:
        rule = policy.rule_for(kind)
        rules[kind] = rule if rule is not None and rule.enabled else None
        cutoffs[kind] = (
            age_cutoff(now, rule.max_age)
            if rule is not None and rule.max_age > timedelta(0)
            else None
        )
    heaps: dict[Kind, list[tuple[datetime, str, int, SessionMeta]]] = {}
    tie = itertools.count()
    selected: list[PlanEntry] = []
    skipped: Counter[str] = Counter()
    digest = 0
    scanned = 0
    for meta in rows:
        scanned += 1
        why = _protection(meta, protected_ids, leased_ids)
        digest = (digest + _row_digest(meta, why)) % _MOD_256
        if why:
            skipped[why] += 1
            continue
        kind = Kind(meta.kind)
        rule = rules[kind]
        if rule is None:
            continue
        cutoff = cutoffs[kind]
        if cutoff is not None and meta.modified_at < cutoff:
            selected.append(PlanEntry(meta, "age"))
            continue
        if rule.max_count <= 0:
            continue
        heap = heaps.setdefault(kind, [])
        heapq.heappush(heap, (meta.modified_at, meta.id, next(tie), meta))
        if len(heap) > rule.max_count:
            oldest = heapq.heappop(heap)[3]
            selected.append(PlanEntry(oldest, "cap"))
    selected.sort(key=lambda entry: _order_key(entry.meta))
    return Plan(
        entries=selected,
        counts=_count(selected),
        generation=_generation(policy, scanned, digest),
        policy=policy,
        now=now,
        scanned=scanned,
        protected=dict(skipped),
    )


def _count(entries: list[PlanEntry]) -> PlanCounts:
    return PlanCounts(
        total=len(entries),
        by_kind=dict(Counter(str(e.meta.kind) for e in entries)),
        by_state=dict(Counter(str(e.meta.state) for e in entries)),
        by_reason=dict(Counter(e.reason for e in entries)),
    )


def _generation(policy: Policy, scanned: int, digest: int) -> str:
    text = json.dumps(
        {
            "v": GENERATION_VERSION,
            "policy": policy.to_json(),
            "rows": scanned,
            "digest": f"{digest:064x}",
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def plan(
    store: Store,
    policy: Policy,
    *,
    now: datetime | None = None,
    protected: Collection[str] = (),
) -> Plan:
    """Plan ``policy`` over ``store``'s whole inventory, streamed oldest first.

    Reads ``store.leases.held()`` (those ids are protected as ``leased``) and
    then streams ``store.sessions.iter_meta()``; ``now`` defaults to the clock
    read at call time. Nothing is written.

    Rows written after planning started are left out: they are fresh by
    definition, and a session written while the stream runs would otherwise
    be seen twice (its key moves to the end of the stream). Leaving them out
    only ever keeps more sessions, never deletes one more.

    Raises:
        StoreError: the store could not be read.
    """
    started = clock.now()
    at = started if now is None else now
    leased = store.leases.held()
    rows = (m for m in store.sessions.iter_meta() if m.modified_at <= started)
    return plan_rows(rows, policy, at, protected, leased=leased)
