"""``sqlstore ui``: serve the read-only web viewer of the ``--db`` store.

The viewer lives in :mod:`sqlstore.ui` behind the optional extra ``ui``; this
command only parses the flags, opens the store read-only, hands the viewer a
retention source built on :mod:`retention` (``sqlstore`` never imports it), and
serves until Ctrl-C or SIGTERM. Without the extra it fails with ``Error:`` and
the ``pip install 'sqlstore[ui]'`` hint, and nothing else of the CLI needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sqlstore import retention
from sqlstore.errors import StoreError
from sqlstore.sqlite import SQLiteStore

from .checkpoint_render import checkpoint_lines, thread_conversation
from .context import AsciiIntRange, CliContext, pass_cli
from .retention_cmd import config_option, load
from .session_cmd import latest_checkpoint

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


class ExtraMissing(StoreError):
    """An optional extra that the command needs is not installed."""

    default_hint = "Install it: pip install 'sqlstore[ui]'"


@dataclass(frozen=True, slots=True)
class PolicySource:
    """The retention page's data: a plan (read-only) and the sweep history of a policy."""

    config: retention.RetentionConfig

    def describe(self) -> str:
        """Return the policy in one line."""
        return self.config.policy.describe()

    def plan(self, store: SQLiteStore) -> dict[str, Any]:
        """Plan under the policy now, without deleting anything."""
        return retention.plan(store, self.config.policy).to_json()

    def history(self, store: SQLiteStore, limit: int) -> list[dict[str, Any]]:
        """Return the newest recorded sweeps."""
        return [r.to_json() for r in retention.list_runs(store, limit)]


@dataclass(frozen=True, slots=True)
class CheckpointSource:
    """The session page's text for a graph thread: the checkpoint part of ``sqlstore show``."""

    def lines(self, store: SQLiteStore, session_id: str) -> list[str] | None:
        """Return the latest checkpoint and its messages as text, or None for other sessions."""
        thread = latest_checkpoint(store, session_id)
        if thread is None:
            return None
        text = [*checkpoint_lines(*thread), *thread_conversation(thread[1])]
        while text and not text[0]:
            text.pop(0)  # the CLI's blank separator before the section
        return text


@click.command("ui", short_help="Serve a read-only web viewer of the store.")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", type=AsciiIntRange(1, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--open", "open_browser", is_flag=True, help="Open the viewer in a web browser.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback --host (needs --token).")
@click.option(
    "--token",
    envvar="SQLSTORE_UI_TOKEN",
    show_envvar=True,
    help="Access token every request must carry (?token=, cookie or Bearer).",
)
@config_option
@pass_cli
def ui_cmd(
    cli: CliContext,
    host: str,
    port: int,
    open_browser: bool,
    allow_remote: bool,
    token: str | None,
    config_path: Path | None,
) -> None:
    """Serve a read-only web viewer of the store until Ctrl-C or SIGTERM.

    Sessions (filters, counts), one session's conversation, its timeline with
    live follow, tool calls, the retention plan and history, stats and check.
    The file is opened read-only and never changed. Loopback only, unless
    --allow-remote is given with --token.

    Example:

    \b
        sqlstore --db ~/agent/sessions.db ui --open
    """
    try:
        from sqlstore.ui.context import Viewer
        from sqlstore.ui.server import check_bind, serve
    except ImportError as exc:
        raise ExtraMissing(f"sqlstore ui needs the optional extra 'ui' ({exc})") from exc
    guard = check_bind(host, allow_remote=allow_remote, token=token)
    source = PolicySource(load(config_path))
    store = cli.open_store(readonly=True)
    serve(
        Viewer(store=store, retention=source, threads=CheckpointSource()),
        guard,
        port=port,
        open_browser=open_browser,
        announce=lambda line: click.echo(line, err=True),
    )
