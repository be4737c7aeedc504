"""Event-sourced fold: rebuild a ``Session`` from its event log (SPEC §5)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlstore import clock
from sqlstore.events import Event
from sqlstore.model import Kind, Limits, Principal, Relationship
from sqlstore.session import Session


@dataclass(frozen=True, slots=True)
class SessionSeed:
    """What the event log does not carry: identity, configuration and lineage."""

    id: str
    mode: str = "default"
    limits: Limits = field(default_factory=Limits)
    kind: Kind = Kind.MAIN
    relationship: Relationship = field(default_factory=Relationship)
    owner: Principal | None = None
    provider_id: str = ""
    model_id: str = ""
    created_at: datetime | None = None
    title: str = ""


def fold(seed: SessionSeed, events: Iterable[Event]) -> Session:
    """Rebuild a session from ``seed`` and its events (TODO: helper implements)."""
    raise NotImplementedError(clock.__name__, seed, events)
