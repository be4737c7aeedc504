"""ADK state rules of the integration: splitting a state delta by prefix, the snapshot marker.

``app:`` and ``user:`` keys go to scoped state, ``temp:`` keys are dropped, the
rest is session state. Values are made JSON the way ADK's own SQL services do
(``to_jsonable_python``), then checked like every stored value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.sessions.state import State
from pydantic_core import PydanticSerializationError, to_jsonable_python

from sqlstore.errors import StoreError
from sqlstore.integrations import adk_events as mapping
from sqlstore.model import JSON
from sqlstore.scopes import InvalidState, encode_delta
from sqlstore.session import Session

STALE = (
    "The session was changed by another writer after it was loaded (its storage version "
    "moved on); reload it with get_session and retry."
)


def marker(snap: Session) -> dict[str, JSON]:
    doc = snap.extra.get(mapping.MARKER_KEY)
    if not isinstance(doc, dict):
        raise StoreError(
            f"session {snap.id!r} exists and is not an ADK session",
            hint="Delete it with `sqlstore rm ID`, or use another session id.",
        )
    return dict(doc)


def split(state: Mapping[str, Any]) -> dict[str, dict[str, JSON]]:
    """Split a state (delta) into app, user and session parts; ``temp:`` keys are dropped.

    Values are made JSON the way ADK's own SQL services do (``to_jsonable_python``:
    datetimes, models, bytes); a value that still is not JSON raises ``InvalidState``.
    """
    out: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for key, value in state.items():
        if key.startswith(State.TEMP_PREFIX):
            continue
        if key.startswith(State.APP_PREFIX):
            out["app"][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            out["user"][key.removeprefix(State.USER_PREFIX)] = value
        else:
            out["session"][key] = value
    try:
        jsonable: dict[str, dict[str, JSON]] = to_jsonable_python(out)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise InvalidState(f"session state is not JSON: {exc}") from None
    for part, delta in jsonable.items():
        encode_delta(f"{part} state", delta)  # InvalidState naming the key (NaN, lone surrogates)
    return jsonable
