"""Units of work: what ``store.apply``, ``append_events`` and conditional ``save`` write.

Every backend validates and encodes its input here, *before* it starts a
transaction, so bad input (a wrong type, a too-large record, a snapshot of
another session) fails with nothing written, and the rules below are the same
on every backend.

**Versions.** A session's version is the ``version`` of its inventory row
(:class:`~sqlstore.inventory.SessionMeta`): it grows with every unit of work
on the session — one step for a ``save``, one for a whole ``append_events``
batch, one for a whole ``apply``, one for each single ``append*`` or audit
``record``. Only sessions with a snapshot have a version; a session without one
has *no* version (``stored_version=None`` on a conflict).

**Expected versions** (``expected_version`` of ``save`` and ``apply``):

* ``None`` — unconditional.
* ``0`` — the session must not have a snapshot yet ("create"); stored versions
  start at 1, so 0 is never the version of a stored snapshot.
* ``n > 0`` — the stored snapshot must have version ``n``; a missing session
  is a conflict.

A mismatch raises :class:`~sqlstore.errors.VersionConflict` and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlstore import snapshot as snapshot_codec
from sqlstore.audit import ToolCallRecord, check_record
from sqlstore.errors import InvalidEvent, VersionConflict
from sqlstore.events import Event, encode_event
from sqlstore.model import JSON, validate_session_id
from sqlstore.scopes import encode_scopes
from sqlstore.session import Session


@dataclass(frozen=True, slots=True)
class Applied:
    """The outcome of ``store.apply``: the session's version after it, and a cursor per event.

    ``version`` is 0 when the session has no snapshot after the unit (events or
    audit rows of a session that was never saved).
    """

    version: int
    cursors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Unit:
    """The arguments of one ``store.apply`` call, for writing several at once.

    See :func:`sqlstore.ports.apply_each`: each unit is applied as by
    ``store.apply(session_id, snapshot=..., events=..., audit=...,
    expected_version=...)`` and has its own outcome.
    """

    session_id: str
    snapshot: Session | None = None
    events: Sequence[Event] = ()
    audit: Sequence[ToolCallRecord] = ()
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class EncodedEvent:
    """An event ready to store: its type and its JSON body."""

    type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class ChangeSet:
    """A validated, encoded unit of work on one session."""

    session_id: str
    snapshot: Session | None
    blob: bytes | None
    events: list[EncodedEvent]
    audit: list[ToolCallRecord]
    expected_version: int | None
    scopes: dict[str, dict[str, str]] = field(default_factory=dict)
    """Scoped state deltas merged by the unit: scope → key → JSON text (:mod:`sqlstore.scopes`)."""

    @property
    def empty(self) -> bool:
        """True when the unit writes nothing (it may still check a version)."""
        return self.snapshot is None and not self.events and not self.audit and not self.scopes


def check_expected_version(expected_version: int | None) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``expected_version`` is None or an int >= 0."""
    if expected_version is None:
        return
    if isinstance(expected_version, bool) or not isinstance(expected_version, int):
        raise TypeError(
            f"expected_version must be an int or None, not {type(expected_version).__name__}"
        )
    if expected_version < 0:
        raise ValueError(
            f"expected_version must be >= 0 (0 = the session must not exist), "
            f"got {expected_version}"
        )


def encode_events(events: Sequence[Event]) -> list[EncodedEvent]:
    """Encode a batch of events (all of them, before anything is written).

    Raises:
        TypeError: ``events`` is a single ``Event``, a string, or not iterable.
        InvalidEvent: an item is not an Event, not JSON-serialisable, or too large
            (the message names its index).
    """
    if isinstance(events, Event | str | bytes) or not hasattr(events, "__iter__"):
        raise TypeError(
            f"events must be a sequence of Event, not {type(events).__name__} "
            "(pass [event] for one event)"
        )
    out: list[EncodedEvent] = []
    for index, event in enumerate(events):
        try:
            body = encode_event(event)
        except InvalidEvent as exc:
            raise InvalidEvent(f"events[{index}]: {exc.message}", hint=exc.hint) from None
        out.append(EncodedEvent(event.type, body))
    return out


def prepare(
    session_id: str,
    *,
    snapshot: Session | None = None,
    events: Sequence[Event] = (),
    audit: Sequence[ToolCallRecord] = (),
    expected_version: int | None = None,
    scopes: Mapping[str, Mapping[str, JSON]] | None = None,
) -> ChangeSet:
    """Validate and encode a unit of work for one session.

    ``scopes`` maps scope ids to state deltas merged in the same unit (scoped
    state is shared beyond the session: see :mod:`sqlstore.scopes`).

    Raises:
        InvalidSessionId: the id is not valid.
        TypeError: an argument (or a field of an audit record) has the wrong type.
        ValueError: the snapshot or an audit record belongs to another session, an
            audit field cannot be stored (see :func:`sqlstore.audit.check_record`),
            or ``expected_version`` is negative.
        InvalidEvent: an event cannot be stored.
        SnapshotError: the snapshot cannot be encoded.
        InvalidState: a scope delta is not a mapping of JSON values.
    """
    validate_session_id(session_id)
    check_expected_version(expected_version)
    blob = None
    if snapshot is not None:
        if not isinstance(snapshot, Session):
            raise TypeError(f"snapshot must be a Session, not {type(snapshot).__name__}")
        if snapshot.id != session_id:
            raise ValueError(
                f"snapshot is of session {snapshot.id!r}, not of {session_id!r} being applied"
            )
        blob = snapshot_codec.encode(snapshot)
    encoded = encode_events(events)
    if isinstance(audit, ToolCallRecord | str | bytes) or not hasattr(audit, "__iter__"):
        raise TypeError(f"audit must be a sequence of ToolCallRecord, not {type(audit).__name__}")
    records = list(audit)
    for index, rec in enumerate(records):
        if not isinstance(rec, ToolCallRecord):
            raise TypeError(f"audit[{index}] must be a ToolCallRecord, not {type(rec).__name__}")
        if rec.session_id != session_id:
            raise ValueError(
                f"audit[{index}] is of session {rec.session_id!r}, not of {session_id!r}"
            )
        try:
            check_record(rec)
        except TypeError as exc:
            raise TypeError(f"audit[{index}]: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"audit[{index}]: {exc}") from None
    deltas = encode_scopes(scopes)
    return ChangeSet(session_id, snapshot, blob, encoded, records, expected_version, deltas)


def check_version(session_id: str, expected_version: int | None, stored: int | None) -> None:
    """Raise ``VersionConflict`` unless ``stored`` (None = no snapshot) meets the expectation."""
    if expected_version is None:
        return
    if (stored is None and expected_version == 0) or stored == expected_version != 0:
        return
    raise VersionConflict(session_id, expected_version=expected_version, stored_version=stored)


def prepare_save(session: Session, expected_version: int | None) -> ChangeSet:
    """Validate and encode a ``sessions.save`` (a unit holding only a snapshot).

    Raises:
        TypeError: ``session`` is not a Session, or ``expected_version`` not an int.
        ValueError: ``expected_version`` is negative.
        SnapshotError: the session cannot be encoded.
    """
    if not isinstance(session, Session):
        raise TypeError(f"save takes a Session, not {type(session).__name__}")
    return prepare(session.id, snapshot=session, expected_version=expected_version)
