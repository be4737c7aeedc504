"""Run recorder: adapts a store to an agent loop (SPEC §2.6).

A ``Recorder`` writes what an agent loop produces during a run — messages,
events, tool-call audit records, a compaction reset and the final result — to
one session of a store, with the behaviours of openzot's run log:

* **Snapshot creation.** The session is created on the first write that needs
  a snapshot (``record_message``, ``record_reset``, ``record_result``) from the
  ``seed`` given to the recorder (by default ``SessionSeed(id=session_id)``: a
  ``main`` session in ``default`` mode), with ``sessions.create``; an existing
  snapshot is used as it is. ``record_event`` and ``record_tool_call`` never
  create a snapshot.
* **Messages** are appended verbatim (``extra``, ``reasoning`` and parts kept)
  to the stored conversation and saved at once; every call re-reads the
  snapshot, so writes by the host between calls are kept. The first user
  message sets an empty title (clamped as in :meth:`Session.record_user_prompt`).
  The first message of a run marks the session ``running`` (an ``idle``
  session, or a finished one, which first returns to ``idle`` through
  ``reopen``/``recover``/``interrupt`` as a new run begins); retention never
  prunes a running session. Counters are not touched: they belong to the
  agent loop's own use of the :class:`Session` methods.
* **Events** go to the event log as they are, except token-level narration
  (``TOKEN_LEVEL_TYPES``: ``message.delta``, ``reasoning.delta``, ``token``,
  ``reasoningToken``), which is dropped.
* **Reset** (compaction, openzot's ``reset`` record): the conversation stored so
  far is discarded from the resumable snapshot, and a ``compaction.archive``
  event whose ``data.replaced`` holds the discarded messages is appended first
  (JSONL-FORMATS §1 maps a run-log ``reset`` the same way). Events stay. The
  fold (SPEC §5) therefore rebuilds the uncompacted history from the log, while
  the snapshot keeps only what came after the last reset.
* **Result** ends the run: a ``result`` event with ``data`` = ``stop``,
  ``usage``, ``error``, ``progress`` (plus any extra keys) is appended, the
  usage is added to the session's cumulative usage, and the session moves as
  the fold would move it: ``cancelled`` → cancelled; ``error`` with progress not
  ``"complete"`` → failed (``last_error`` = error, else text); anything else →
  completed with that stop reason.

Writes that touch both the log and the snapshot append the event first, so the
log is never behind the snapshot. A failure in between leaves the log ahead;
the caller must not retry blindly (an append's outcome is unknown on error).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlstore.audit import ToolCallRecord
from sqlstore.errors import IllegalTransition, SessionAlreadyExists, SessionNotFound
from sqlstore.events import TOKEN_LEVEL_TYPES, Event
from sqlstore.fold import FAILED_WITHOUT_ERROR_TEXT, SessionSeed
from sqlstore.model import JSON, ROLES, Message, State, Usage, validate_session_id
from sqlstore.ports import Store
from sqlstore.session import Session, clamp_title

RESULT_KEYS = frozenset({"stop", "usage", "error", "progress"})
"""Keys of a ``result`` event's data that ``record_result`` fills itself."""


class Recorder:
    """Record one agent run into a store's session, event log and audit trail."""

    def __init__(
        self,
        store: Store,
        session_id: str,
        *,
        seed: SessionSeed | None = None,
        run_id: str = "",
    ) -> None:
        """Bind the recorder to ``store`` (any backend) and one session id.

        Args:
            store: a store with ``sessions``, ``events`` and ``audit`` parts.
            session_id: the session to record into.
            seed: how to create the session when it has no snapshot yet; its id
                must be ``session_id``.
            run_id: when set, stored as the session's ``run_id`` and put on the
                ``result`` event.

        Raises:
            InvalidSessionId: the id is not valid.
            ValueError: the seed names another session.
        """
        self._id = validate_session_id(session_id)
        if seed is not None and seed.id != session_id:
            raise ValueError(f"seed is for session {seed.id!r}, not {session_id!r}")
        self._seed = seed if seed is not None else SessionSeed(id=session_id)
        self._store = store
        self._run_id = run_id

    @property
    def session_id(self) -> str:
        """The id of the recorded session."""
        return self._id

    def load(self) -> Session:
        """Return the stored session, or the session the seed would create (not stored)."""
        try:
            session: Session = self._store.sessions.load(self._id)
        except SessionNotFound:
            session = self._seed.new_session()
        return session

    def record_message(self, message: Message) -> Session:
        """Append ``message`` to the stored conversation and save it; returns the saved session.

        Raises:
            TypeError: ``message`` is not a ``Message``.
            ValueError: the role is not one of system, user, assistant, tool.
            SnapshotError: the message cannot be encoded (e.g. reserved extra keys).
        """
        if not isinstance(message, Message):
            raise TypeError(f"expected a Message, not {type(message).__name__}")
        if message.role not in ROLES:
            raise ValueError(f"message role {message.role!r} is not one of {sorted(ROLES)}")

        def append(session: Session) -> None:
            if session.state.terminal:
                _back_to_idle(session)
            if session.state is State.IDLE:
                session.state = State.RUNNING
            session.messages.append(message)
            if message.role == "user" and not session.title:
                session.title = clamp_title(message.text)

        return self._update(append)

    def record_event(self, event: Event) -> str | None:
        """Append ``event`` to the log unless it is token-level narration.

        Returns:
            The cursor just after the appended record, or ``None`` when the event
            was dropped.

        Raises:
            InvalidEvent: the event cannot be stored.
        """
        if event.type in TOKEN_LEVEL_TYPES:
            return None
        cursor: str = self._store.events.append_event(self._id, event)
        return cursor

    def record_reset(self) -> list[Message]:
        """Discard the stored conversation from the snapshot (compaction); events stay.

        Appends a ``compaction.archive`` event holding the discarded messages,
        then saves the snapshot with an empty conversation.

        Returns:
            The discarded messages.

        Raises:
            IllegalTransition: the session is awaiting a permission answer.
        """
        current = self.load()
        if current.state is State.AWAITING:
            raise IllegalTransition(
                f"cannot reset session {self._id!r} while it is awaiting a permission answer"
            )
        discarded = list(current.messages)
        self._store.events.append_event(
            self._id,
            Event(
                "compaction.archive",
                run_id=self._run_id or current.run_id,
                data={"replaced": [m.to_json() for m in discarded]},
            ),
        )
        self._update(lambda session: session.replace_history([]))
        return discarded

    def record_tool_call(self, record: ToolCallRecord) -> None:
        """Store one tool-call audit record (``at`` defaults to now in the store).

        Raises:
            ValueError: the record names another session.
        """
        if record.session_id != self._id:
            raise ValueError(f"audit record is for session {record.session_id!r}, not {self._id!r}")
        self._store.audit.record(record)

    def record_result(
        self,
        stop: str = "end_turn",
        *,
        text: str = "",
        error: str = "",
        usage: Usage | None = None,
        progress: str = "",
        data: dict[str, JSON] | None = None,
    ) -> Session:
        """End the run: append a ``result`` event and move the session to its final state.

        Args:
            stop: the stop reason (``end_turn``, ``cancelled``, ``error``, ``budget``, …).
            text: the event text (a closing message).
            error: the error text of a failed run.
            usage: token usage of this run; added to the session's cumulative usage.
            progress: ``"complete"`` when an ``error`` stop came after a complete reply.
            data: more keys for the event's data (e.g. openzot's ``code``,
                ``iterations``); must not repeat stop, usage, error or progress.

        Returns:
            The saved session.

        Raises:
            IllegalTransition: the run already ended (the session is terminal);
                nothing is written.
            ValueError: ``data`` repeats a key this method fills.
        """
        extra = dict(data or {})
        clash = RESULT_KEYS.intersection(extra)
        if clash:
            raise ValueError(f"data repeats result keys {sorted(clash)}")
        run_usage = usage if usage is not None else Usage()
        current = self.load()
        if current.state.terminal:
            raise IllegalTransition(
                f"cannot record a result for session {self._id!r}: its run already ended "
                f"({current.state})"
            )
        payload: dict[str, JSON] = {
            "stop": stop,
            "usage": run_usage.to_json(),
            "error": error,
            "progress": progress,
        }
        payload.update(extra)
        self._store.events.append_event(
            self._id,
            Event("result", text=text, run_id=self._run_id or current.run_id, data=payload),
        )

        def finish(session: Session) -> None:
            session.usage = session.usage + run_usage
            if stop == "cancelled":
                session.cancel()
            elif stop == "error" and progress != "complete":
                session.fail(error or text or FAILED_WITHOUT_ERROR_TEXT)
            else:
                session.stop(stop or "end_turn")

        return self._update(finish)

    def _update(self, change: Callable[[Session], None]) -> Session:
        """Load (or seed) the session, apply ``change`` and store it.

        A session created by someone else between our load and our create is
        reloaded and ``change`` is applied to it instead.
        """
        for _attempt in range(2):
            try:
                session: Session = self._store.sessions.load(self._id)
                fresh = False
            except SessionNotFound:
                session = self._seed.new_session()
                fresh = True
            change(session)
            if self._run_id:
                session.run_id = self._run_id
            if not fresh:
                self._store.sessions.save(session)
                return session
            try:
                self._store.sessions.create(session)
                return session
            except SessionAlreadyExists:
                continue
        raise SessionAlreadyExists(self._id)


def _back_to_idle(session: Session) -> None:
    """Return a finished session to idle through the transition its state allows."""
    if session.state is State.COMPLETED:
        session.reopen()
    elif session.state is State.FAILED:
        session.recover()
    else:
        session.interrupt()
