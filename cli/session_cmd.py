"""Session commands: ``ls``, ``show``, ``events``, ``audit`` and ``rm``.

Each mirrors one library call — ``sessions.inventory``, ``sessions.load``,
``events.read_after``, ``audit.list``, ``sessions.delete`` — and renders its
result. All but ``rm`` only read and never create a database file.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from datetime import timedelta
from types import FrameType

import click

from sqlstore import clock, snapshot
from sqlstore.checkpoints import CheckpointEntry, CheckpointQuery, ThreadSummary
from sqlstore.integrations import transcripts
from sqlstore.inventory import SessionMeta
from sqlstore.model import Kind, Principal, State
from sqlstore.ports import Store, checkpoints_of

from . import checkpoint_render, render
from .context import (
    DURATION,
    AsciiIntRange,
    CliContext,
    Refused,
    json_option,
    pass_cli,
    stdin_is_terminal,
)

LS_DEFAULT_LIMIT = 100
"""Rows ``sqlstore ls`` prints unless ``--limit`` says otherwise."""


def parse_owner(subject: str | None, issuer: str | None) -> tuple[Principal | None, bool]:
    """Return the ``page`` owner scope for ``--owner``/``--issuer`` (scoped only with issuer)."""
    if subject is None:
        if issuer is not None:
            raise click.UsageError("--issuer needs --owner")
        return None, False
    if issuer is None:
        return None, False
    return Principal(issuer=issuer, subject=subject), True


@click.command("ls", short_help="List sessions, newest first.")
@click.option("--state", "states", multiple=True, type=click.Choice([s.value for s in State]))
@click.option("--kind", "kinds", multiple=True, type=click.Choice([k.value for k in Kind]))
@click.option("--owner", metavar="SUBJECT", help="Only sessions of this owner subject.")
@click.option("--issuer", metavar="ISSUER", help="With --owner: the owner's issuer.")
@click.option("--older-than", type=DURATION, help="Last written more than this long ago.")
@click.option("--newer-than", type=DURATION, help="Last written within this long.")
@click.option(
    "--limit",
    type=AsciiIntRange(min=0),
    default=LS_DEFAULT_LIMIT,
    show_default=True,
    help="Most rows to print (0: all).",
)
@click.option(
    "--orphans",
    is_flag=True,
    help="List the ids that hold events or audit rows but no snapshot instead.",
)
@json_option
@pass_cli
def ls_cmd(
    cli: CliContext,
    states: tuple[str, ...],
    kinds: tuple[str, ...],
    owner: str | None,
    issuer: str | None,
    older_than: timedelta | None,
    newer_than: timedelta | None,
    limit: int,
    orphans: bool,
) -> None:
    """List sessions, newest first (by last write).

    --state and --kind may be repeated. --owner alone matches the subject under
    any issuer; with --issuer it uses the store's owner index. The listing is
    read in one read transaction: it shows the store as it was at one moment,
    complete, however many agents write meanwhile (and it never blocks them).

    --orphans lists the ids that hold an event log or audit rows but no
    snapshot (an append after `rm` or a prune, a recorder event before the first
    save): `sqlstore rm ID` removes one, and retention prunes them by their last
    write. A plain `ls` says how many there are below its table.

    Example:

    \b
        sqlstore ls --kind subagent --state failed --older-than 7d --limit 20
    """
    if orphans:
        ls_orphans(cli, limit)
        return
    scope, enforce = parse_owner(owner, issuer)
    now = clock.now()

    def match(meta: SessionMeta) -> bool:
        age = now - meta.modified_at
        return (
            (newer_than is None or age <= newer_than)
            and (older_than is None or age > older_than)
            and (not states or meta.state.value in states)
            and (not kinds or meta.kind.value in kinds)
            and (owner is None or (meta.owner is not None and meta.owner.subject == owner))
        )

    with cli.open_store(readonly=True) as store:
        listing = store.sessions.inventory(
            owner=scope, enforce_owner=enforce, match=match, limit=limit
        )
        orphaned = 0 if cli.json else len(store.sessions.orphans())
    rows, total, more = listing.sessions, listing.total, listing.more
    cli.note(f"listed {len(rows)} of {total} sessions in one read")

    def human() -> Iterator[str]:
        if not rows:
            yield "No sessions match."
        else:
            yield from render.session_rows(rows)
        if more:
            yield f"(first {limit} shown; {total} stored; raise --limit to see more)"
        if orphaned:
            yield (
                f"({orphaned} more id(s) hold events or audit rows but no snapshot: "
                "`sqlstore ls --orphans` lists them)"
            )

    cli.emit([m.to_json() for m in rows], human)


def ls_orphans(cli: CliContext, limit: int) -> None:
    """Print the orphans (``sessions.orphans()``), newest last write first, at most ``limit``."""
    with cli.open_store(readonly=True) as store:
        found = store.sessions.orphans()
    shown = found[:limit] if limit else found

    def human() -> Iterator[str]:
        if not shown:
            yield "No ids hold events or audit rows without a snapshot."
            return
        yield from render.orphan_rows(shown)
        if len(shown) < len(found):
            yield f"(first {limit} shown; {len(found)} in all; raise --limit to see more)"

    cli.emit([o.to_json() for o in shown], human)


@click.command(short_help="Show a session's summary and conversation.")
@click.argument("session_id", metavar="ID")
@json_option
@pass_cli
def show(cli: CliContext, session_id: str) -> None:
    """Show one session: a summary, then the conversation (--json: the snapshot JSON).

    Example:

    \b
        sqlstore show 20250101-120000
    """
    with cli.open_store(readonly=True) as store:
        session = store.sessions.load(session_id)
        meta = store.sessions.meta(session_id)
        rebuilt = transcripts.conversation(store, session)  # framework sessions: from the log
        thread = latest_checkpoint(store, session_id)  # graph threads: their checkpoints
    if rebuilt is not None:
        session.messages = rebuilt
    if cli.json:
        doc = snapshot.to_json(session)
        if thread is not None:
            doc["checkpoint"] = checkpoint_render.checkpoint_doc(*thread)
        click.echo(render.json_text(doc, indent=2))
        return
    for line in render.session_summary(session, meta):
        render.echo(line)
    for line in render.conversation(session.messages):
        render.echo(line)
    if thread is not None:
        for line in checkpoint_render.checkpoint_lines(*thread):
            render.echo(line)
        for line in checkpoint_render.thread_conversation(thread[1]):
            render.echo(line)


def latest_checkpoint(
    store: Store, session_id: str
) -> tuple[ThreadSummary, CheckpointEntry] | None:
    """Return a graph thread's counts and newest root checkpoint, or None for other sessions."""
    port = checkpoints_of(store)
    if port is None:
        return None
    summary = port.summary(session_id)
    entry = port.get(session_id, "") if summary.checkpoints else None
    if entry is None:
        page = port.page(CheckpointQuery(thread_id=session_id), limit=1)
        entry = page.entries[0] if page.entries else None
    return None if entry is None else (summary, entry)


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGINT/SIGTERM while the block runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@click.command(short_help="Print a session's event log as JSON Lines.")
@click.argument("session_id", metavar="ID")
@click.option("--after", default="", metavar="CURSOR", help="Start after this cursor.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new records (Ctrl-C stops).")
@click.option("--limit", type=AsciiIntRange(min=0), default=0, help="Most records (0: all).")
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Only this event type.")
@json_option
@pass_cli
def events(
    cli: CliContext,
    session_id: str,
    after: str,
    follow: bool,
    limit: int,
    types: tuple[str, ...],
) -> None:
    """Print a session's event log as JSON Lines, each record with its cursor.

    Pass a record's "cursor" to --after to resume strictly after it. With
    --follow, new records are printed as they are appended until Ctrl-C (exit 0).
    --type may be repeated; it hides gaps and other types (--limit then counts
    printed records).

    Example:

    \b
        sqlstore events 20250101-120000 --after "$CURSOR" --follow --type tool.call
    """
    stop = threading.Event()
    printed = 0
    guard = stop_on_signals(stop) if follow else contextlib.nullcontext()
    with cli.open_store(readonly=True) as store, guard:
        records = store.events.read_after(
            session_id, after, limit=0 if types else limit, follow=follow, stop=stop
        )
        try:
            for rec in records:
                if types and (rec.event is None or rec.event.type not in types):
                    continue
                click.echo(render.json_line(rec.to_json()))
                printed += 1
                if types and limit and printed >= limit:
                    break
        except KeyboardInterrupt:
            if not follow:
                raise
            stop.set()  # a Ctrl-C that slipped past the handler still ends a follow cleanly
        finally:
            close = getattr(records, "close", None)
            if close is not None:
                close()  # release the follower's connection at once
    cli.note(f"{printed} records")


@click.command(short_help="Show a session's tool-call audit trail.")
@click.argument("session_id", metavar="ID")
@click.option("--tool", "tools", multiple=True, metavar="TOOL", help="Only this tool.")
@click.option("--errors", "errors_only", is_flag=True, help="Only calls that failed.")
@json_option
@pass_cli
def audit(cli: CliContext, session_id: str, tools: tuple[str, ...], errors_only: bool) -> None:
    """Show a session's tool-call audit trail, in record order.

    Example:

    \b
        sqlstore audit 20250101-120000 --tool bash --errors
    """
    with cli.open_store(readonly=True) as store:
        records = store.audit.list(session_id)
    chosen = [
        r for r in records if (not tools or r.tool in tools) and (not errors_only or r.is_error)
    ]

    def human() -> Iterator[str]:
        if not chosen:
            yield "No tool calls match."
            return
        yield from render.audit_rows(chosen)

    cli.emit([r.to_json() for r in chosen], human)


@click.command(short_help="Delete sessions with their events and audit rows.")
@click.argument("session_ids", metavar="ID...", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@json_option
@pass_cli
def rm(cli: CliContext, session_ids: tuple[str, ...], yes: bool) -> None:
    """Delete sessions: snapshot, events and audit rows, each in one transaction.

    Every id must exist (a session, or an orphan listed by `ls --orphans`:
    events or audit rows without a snapshot), or nothing is deleted. On a terminal it asks first;
    elsewhere (scripts, pipes) it refuses unless --yes is given.

    Example:

    \b
        sqlstore rm 20250101-120000 20250102-080000 --yes
    """
    ids = list(dict.fromkeys(session_ids))
    with cli.open_store() as store:
        orphaned = {o.id for o in store.sessions.orphans()}
        for session_id in ids:
            if session_id not in orphaned:
                store.sessions.meta(session_id)  # SessionNotFound before anything is deleted
        if not yes:
            if not stdin_is_terminal():
                raise Refused(
                    "refusing to delete without confirmation: standard input is not a terminal",
                    hint="Pass --yes to delete without asking.",
                )
            shown = ", ".join(render.visible(sid) for sid in ids)
            click.confirm(f"Delete {len(ids)} session(s): {shown}?", abort=True)
        for session_id in ids:
            store.sessions.delete(session_id)
    cli.emit({"deleted": ids}, [f"Deleted {render.visible(sid)}" for sid in ids])
