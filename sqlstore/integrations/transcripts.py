"""The conversation of a framework session, for ``sqlstore show`` and the viewer.

Framework sessions keep their conversation in the event log, not in the
snapshot (whose ``messages`` stay empty so that a write costs the same at any
length). :func:`conversation` rebuilds it as :class:`~sqlstore.model.Message`
values, which the CLI renders (and escapes) like any other conversation. It
recognises a session by its snapshot ``extra`` marker and imports no framework.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlstore.integrations import adk_events, item_stack, openai_items
from sqlstore.model import Message
from sqlstore.ports import Store
from sqlstore.session import Session

Renderer = Callable[[Store, Session], list[Message]]

_RENDERERS: dict[str, Renderer] = {}


def register(marker_key: str, renderer: Renderer) -> None:
    """Let sessions whose snapshot ``extra`` has ``marker_key`` be shown by ``renderer``."""
    _RENDERERS[marker_key] = renderer


def conversation(store: Store, session: Session) -> list[Message] | None:
    """Return a framework session's conversation, or None for an ordinary session."""
    for key, renderer in _RENDERERS.items():
        if key in session.extra:
            return renderer(store, session)
    return None


def _openai_agents(store: Store, session: Session) -> list[Message]:
    records = store.events.read_after(session.id)
    live = item_stack.replay(records, session.id)
    return openai_items.messages(openai_items.item_of(e) for e in live)


def _adk(store: Store, session: Session) -> list[Message]:
    events = (
        r.event.data
        for r in store.events.read_after(session.id)
        if r.event is not None and r.event.type == adk_events.EVENT_TYPE
    )
    return adk_events.messages(events)


register(openai_items.MARKER_KEY, _openai_agents)
register(adk_events.MARKER_KEY, _adk)
