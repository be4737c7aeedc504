"""Google ADK sessions on sqlstore: ``SqlstoreSessionService`` (extra ``adk``).

A ``google.adk.sessions.BaseSessionService`` with ADK's own semantics, on any
sqlstore backend and across processes. The mapping onto the ports:

* An ADK session (app, user, id) is the sqlstore session ``adk/<app>/<user>/<id>``
  (percent-encoded parts), owned by ``Principal(issuer="adk:<app>", subject=<user>)``,
  titled by its first user text. Its snapshot holds the session-scoped state
  and ``last_update_time`` in ``extra["adk"]``, never the events.
* Each event is one log record (``adk.event``, the event's JSON); partial
  events are not stored and ``temp:`` keys never reach the store.
* ``app:`` and ``user:`` state live in scoped state (``store.scopes``,
  scopes ``adk-app/<app>`` and ``adk-user/<app>/<user>``): shared by the app's /
  user's sessions, never listed as sessions, kept when any session is deleted.
* ``append_event`` is one ``store.apply`` — the event, the snapshot, the app
  and user deltas and the audit rows of answered function calls — conditional
  on the version the caller's session was loaded at (``Session``'s storage
  marker). A writer holding a stale session, in any thread or process, gets
  ADK's ``StaleSessionError`` and nothing is written.
* ``get_session(num_recent_events=N)`` reads the last N records only.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from typing import Any

try:
    from google.adk.errors import StaleSessionError
    from google.adk.errors.already_exists_error import AlreadyExistsError
    from google.adk.errors.session_not_found_error import SessionNotFoundError
    from google.adk.events.event import Event as AdkEvent
    from google.adk.sessions.base_session_service import (
        BaseSessionService,
        GetSessionConfig,
        ListSessionsResponse,
    )
    from google.adk.sessions.session import Session as AdkSession
    from google.adk.sessions.state import State
    from pydantic_core import PydanticSerializationError
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "sqlstore.integrations.adk needs Google ADK: pip install 'sqlstore[adk]'"
    ) from exc

from sqlstore import clock
from sqlstore.errors import SessionNotFound, StoreError, VersionConflict
from sqlstore.events import Event
from sqlstore.integrations import adk_events as mapping
from sqlstore.integrations.adk_read import read_events
from sqlstore.integrations.adk_state import STALE as _STALE
from sqlstore.integrations.adk_state import marker as _marker
from sqlstore.integrations.adk_state import split as _split
from sqlstore.integrations.targets import StoreTarget, resolve_store
from sqlstore.model import JSON
from sqlstore.ports import ScopedState, scopes_of
from sqlstore.scopes import InvalidState
from sqlstore.session import Session, clamp_title

__all__ = ["SqlstoreSessionService", "register", "session_service_factory"]


class SqlstoreSessionService(BaseSessionService):
    """ADK sessions kept in a sqlstore store.

    Args:
        store: a path or ``sqlstore.open`` URL (opened here, closed by
            :meth:`close`), or an existing sync or ``sqlstore.aio`` store
            (shared, never closed here). The backend must offer ``store.scopes``.

    Raises:
        StoreError, ValueError: the store cannot be opened or keeps no scoped state.
    """

    def __init__(self, store: StoreTarget = "sessions.db", **_ignored: Any) -> None:
        self._store, self._owns = resolve_store(store)
        found = scopes_of(self._store)
        if found is None:
            if self._owns:
                self._store.close()
            raise StoreError(
                "this store keeps no scoped state (store.scopes), which ADK's app: and "
                "user: state need",
                hint="Use a SQLite, memory or Redis sqlstore store.",
            )
        self._scopes: ScopedState = found

    # -- BaseSessionService --------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> AdkSession:
        """Create a session (``AlreadyExistsError`` when the id is taken); one atomic write."""
        sid = (session_id or "").strip() or str(uuid.uuid4())
        return await asyncio.to_thread(self._create, app_name, user_id, sid, state or {})

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> AdkSession | None:
        """Return the session with its events (filtered by ``config``), or None."""
        return await asyncio.to_thread(self._get, app_name, user_id, session_id.strip(), config)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """List an app's sessions (of one user, or all), oldest update first, without events."""
        return await asyncio.to_thread(self._list, app_name, user_id)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Delete a session with its events and audit rows; app/user state stays. Idempotent."""
        key = mapping.session_key(app_name, user_id, session_id.strip())
        await asyncio.to_thread(self._store.sessions.delete, key)

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """Return the user's ``user:`` state of the app, keys without the prefix."""
        return await asyncio.to_thread(self._scopes.get, mapping.user_scope(app_name, user_id))

    async def append_event(self, session: AdkSession, event: AdkEvent) -> AdkEvent:
        """Store ``event`` and the state it changes as one write, unless the session is stale.

        Raises:
            StaleSessionError: the session was changed by another writer after it
                was loaded; nothing was written.
            SessionNotFoundError: the session does not exist (any more).
            InvalidState: a state value cannot be stored as JSON; nothing was written.
        """
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        await asyncio.to_thread(self._append, session, event)
        return self._commit_event_to_session(session, event)

    async def close(self) -> None:
        """Close the store if this service opened it."""
        if self._owns:
            self._store.close()

    # -- the work, in a worker thread ---------------------------------------------------

    def _create(self, app: str, user: str, sid: str, state: dict[str, Any]) -> AdkSession:
        key = mapping.session_key(app, user, sid)
        deltas = _split(state)
        now = clock.now().timestamp()
        snap = Session.new(key, owner=mapping.owner(app, user))
        snap.labels = {"adk.app": app, "adk.user": user, "adk.session": sid}
        snap.extra[mapping.MARKER_KEY] = {
            "app": app,
            "user": user,
            "session": sid,
            "state": deltas["session"],
            "last_update_time": now,
            "calls": {},
        }
        try:
            applied = self._store.apply(
                key, snapshot=snap, scopes=self._scope_deltas(app, user, deltas), expected_version=0
            )
        except VersionConflict:
            raise AlreadyExistsError(f"Session with id {sid} already exists.") from None
        return self._session(app, user, sid, deltas["session"], [], now, applied.version)

    def _get(
        self, app: str, user: str, sid: str, config: GetSessionConfig | None
    ) -> AdkSession | None:
        key = mapping.session_key(app, user, sid)
        try:
            snap, version = self._store.sessions.load_versioned(key)
        except SessionNotFound:
            return None
        doc = _marker(snap)
        recent = None if config is None else config.num_recent_events
        after = None if config is None else config.after_timestamp
        found = read_events(self._store.events, key, recent, after)
        events = [AdkEvent.model_validate(data) for data in found]
        state = doc.get("state") if isinstance(doc.get("state"), dict) else {}
        updated = float(doc.get("last_update_time") or 0.0)
        return self._session(app, user, sid, dict(state), events, updated, version)  # type: ignore[arg-type]

    def _list(self, app: str, user: str | None) -> ListSessionsResponse:
        issuer = mapping.owner(app, "").issuer
        rows = [
            m
            for m in self._store.sessions.iter_meta()
            if m.owner is not None
            and m.owner.issuer == issuer
            and (user is None or m.owner.subject == user)
        ]
        sessions = []
        for meta in rows:
            try:
                snap, version = self._store.sessions.load_versioned(meta.id)
            except SessionNotFound:
                continue  # deleted while listing
            doc = _marker(snap)
            state = doc.get("state") if isinstance(doc.get("state"), dict) else {}
            sessions.append(
                self._session(
                    app,
                    str(doc.get("user")),
                    str(doc.get("session")),
                    dict(state),  # type: ignore[arg-type]
                    [],
                    float(doc.get("last_update_time") or 0.0),
                    version,
                )
            )
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    def _append(self, session: AdkSession, event: AdkEvent) -> None:
        app, user, sid = session.app_name, session.user_id, session.id
        key = mapping.session_key(app, user, sid)
        try:
            snap, version = self._store.sessions.load_versioned(key)
        except SessionNotFound:
            raise SessionNotFoundError(f"Session {sid} not found.") from None
        doc = _marker(snap)
        marker = session._storage_update_marker
        if marker is not None and marker != str(version):
            raise StaleSessionError(_STALE)
        if marker is None and float(doc.get("last_update_time") or 0.0) > session.last_update_time:
            raise StaleSessionError(_STALE)
        deltas = _split(event.actions.state_delta if event.actions else {})
        try:
            data = event.model_dump(mode="json", exclude_none=True)
        except (PydanticSerializationError, TypeError, ValueError) as exc:
            raise InvalidState(f"event {event.id!r} is not JSON: {exc}") from None
        pending = dict(doc.get("calls") or {})
        audit = mapping.audit_rows(key, data, pending, clock.now_ns(), clock.now())
        state = dict(doc.get("state") or {})
        state.update(deltas["session"])
        doc.update(state=state, last_update_time=event.timestamp, calls=pending)
        turn = mapping.is_user_text(data)
        new = replace(
            snap,
            extra={**snap.extra, mapping.MARKER_KEY: doc},
            title=snap.title or (clamp_title(mapping.text_of(data)) if turn else ""),
            counters=replace(
                snap.counters,
                turns=snap.counters.turns + int(turn),
                tool_calls=snap.counters.tool_calls + len(audit),
            ),
        )
        try:
            applied = self._store.apply(
                key,
                snapshot=new,
                events=[Event(mapping.EVENT_TYPE, data=data)],
                audit=audit,
                scopes=self._scope_deltas(app, user, deltas),
                expected_version=version if marker is None else int(marker),
            )
        except VersionConflict as exc:
            if exc.stored_version is None:
                raise SessionNotFoundError(f"Session {sid} not found.") from None
            raise StaleSessionError(_STALE) from None
        session.last_update_time = event.timestamp
        session._storage_update_marker = str(applied.version)

    def _scope_deltas(
        self, app: str, user: str, deltas: dict[str, dict[str, JSON]]
    ) -> dict[str, dict[str, JSON]]:
        out: dict[str, dict[str, JSON]] = {}
        if deltas["app"]:
            out[mapping.app_scope(app)] = deltas["app"]
        if deltas["user"]:
            out[mapping.user_scope(app, user)] = deltas["user"]
        return out

    def _session(
        self,
        app: str,
        user: str,
        sid: str,
        state: dict[str, Any],
        events: list[AdkEvent],
        updated: float,
        version: int,
    ) -> AdkSession:
        merged = dict(state)
        for k, v in self._scopes.get(mapping.app_scope(app)).items():
            merged[State.APP_PREFIX + k] = v
        for k, v in self._scopes.get(mapping.user_scope(app, user)).items():
            merged[State.USER_PREFIX + k] = v
        made = AdkSession(
            app_name=app,
            user_id=user,
            id=sid,
            state=merged,
            events=events,
            last_update_time=updated,
        )
        made._storage_update_marker = str(version)
        return made


def session_service_factory(uri: str, **kwargs: Any) -> SqlstoreSessionService:
    """Build the service from a ``sqlstore:`` URI (:mod:`sqlstore.integrations.adk_uri`).

    ADK's keyword arguments (``agents_dir``, ...) are ignored.
    """
    from sqlstore.integrations.adk_uri import service_from_uri

    return service_from_uri(uri, SqlstoreSessionService)


def register() -> None:
    """Register the ``sqlstore`` scheme in ADK's service registry (``adk web``, ``api_server``)."""
    from google.adk.cli.service_registry import get_service_registry

    from sqlstore.integrations.adk_uri import URI_SCHEME

    get_service_registry().register_session_service(URI_SCHEME, session_service_factory)
