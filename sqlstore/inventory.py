"""Inventory rows: what listing and paging return without loading transcripts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlstore import clock
from sqlstore.model import JSON, Kind, Principal, Relationship, State

if TYPE_CHECKING:
    from sqlstore.session import Session


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session id and the time of its last write."""

    id: str
    modified_at: datetime


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """One inventory row: a session's metadata as of its last write.

    ``version`` grows by one on every write to the session (save, event append,
    audit record), so two equal rows mean "nothing changed in between".
    """

    id: str
    modified_at: datetime
    version: int
    state: State
    kind: Kind
    relationship: Relationship
    owner: Principal | None
    created_at: datetime
    title: str
    model_id: str
    turns: int
    estimated_bytes: int

    def to_json(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "modified_at": clock.format_rfc3339(self.modified_at),
            "version": self.version,
            "state": str(self.state),
            "kind": str(self.kind),
            "relationship": self.relationship.to_json(),
            "owner": None if self.owner is None else self.owner.to_json(),
            "created_at": clock.format_rfc3339(self.created_at),
            "title": self.title,
            "model_id": self.model_id,
            "turns": self.turns,
            "estimated_bytes": self.estimated_bytes,
        }


@dataclass(frozen=True, slots=True)
class Page:
    """One page of inventory rows, newest first; ``next_cursor`` is None on the last page."""

    sessions: list[SessionMeta]
    next_cursor: str | None
    total: int


@dataclass(frozen=True, slots=True)
class Lease:
    """A time-limited claim on a session; ``token`` grows on every takeover (fencing)."""

    id: str
    owner: str
    token: int
    expires_at: datetime


def meta_for(session: Session, blob: bytes, modified_at_ns: int, version: int) -> SessionMeta:
    """Return the inventory row describing ``session`` as stored in ``blob``."""
    return SessionMeta(
        id=session.id,
        modified_at=clock.from_ns(modified_at_ns),
        version=version,
        state=session.state,
        kind=session.kind,
        relationship=session.relationship,
        owner=session.owner,
        created_at=session.created_at,
        title=session.title,
        model_id=session.model_id,
        turns=session.counters.turns,
        estimated_bytes=len(blob),
    )


def rows_match(current: SessionMeta, expected: SessionMeta) -> bool:
    """True when the fields ``delete_if_unchanged`` compares are all equal.

    Those are id, modified_at, version, state, kind, relationship and owner
    (SPEC §3.1); every backend applies this one rule.
    """
    return (
        current.id == expected.id
        and current.modified_at == expected.modified_at
        and current.version == expected.version
        and current.state == expected.state
        and current.kind == expected.kind
        and current.relationship == expected.relationship
        and current.owner == expected.owner
    )
