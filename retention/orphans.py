"""Retention of orphans: event logs and audit rows under an id with no snapshot.

An orphan (``sessions.orphans()``) has no kind, state or owner, so no rule of a
policy names it. Retention prunes orphans **by age only, by their last write**:
an orphan whose last append or audit record is older than the *longest*
``max_age`` of the policy's enabled rules is deleted. So an orphan is never
pruned sooner than a session of any kind that policy prunes by age, and a
policy without an age rule (count caps only) never prunes one. Count caps do not
apply to orphans. Protected ids and ids with a live lease are kept, as for
sessions; the sweep deletes each with ``delete_orphan_if_unchanged``, so one
written after planning is kept (counted ``changed``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from sqlstore.inventory import Orphan
from sqlstore.model import Kind

from .policy import Policy


def orphan_max_age(policy: Policy) -> timedelta | None:
    """Return the age past which the policy prunes orphans, or None when it prunes none."""
    ages = [
        rule.max_age
        for kind in Kind
        if (rule := policy.rule_for(kind)) is not None
        and rule.enabled
        and rule.max_age > timedelta(0)
    ]
    return max(ages) if ages else None


def plan_orphans(
    orphans: Iterable[Orphan],
    cutoff: datetime | None,
    protected: Collection[str] = (),
    leased: Collection[str] = (),
) -> list[Orphan]:
    """Return the orphans last written before ``cutoff``, oldest first (pure; None: none).

    ``cutoff`` is ``now`` minus :func:`orphan_max_age` (the planner computes it).
    """
    if cutoff is None:
        return []
    chosen = [
        o
        for o in orphans
        if o.modified_at < cutoff and o.id not in protected and o.id not in leased
    ]
    chosen.sort(key=lambda o: (o.modified_at, o.id))
    return chosen
