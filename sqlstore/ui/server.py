"""Run the viewer: bind checks, the uvicorn server, a clean stop on Ctrl-C or SIGTERM.

Binding rules (checked before anything opens):

* a loopback address (``127.0.0.1`` by default, ``::1``, ``localhost``) needs nothing;
* any other ``--host`` is refused unless ``--allow-remote`` is given **with** a
  ``--token`` (16 to 256 of ``A-Z a-z 0-9 . _ ~ -``) that every request must carry
  (see :mod:`sqlstore.ui.security`);
* ``--token`` may also be used on loopback (other local users can reach a
  loopback port).

On SIGINT or SIGTERM the server stops accepting connections, every live stream
is ended (so no request hangs the shutdown), open requests finish within
:data:`GRACEFUL_STOP_S`, the store is closed, and :func:`serve` returns normally
(the command exits 0). A second Ctrl-C forces the stop.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import signal
import threading
import webbrowser
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

from sqlstore.errors import StoreError
from sqlstore.ui.app import create_app
from sqlstore.ui.context import Viewer
from sqlstore.ui.security import TOKEN_PATTERN, GuardConfig, url_host

GRACEFUL_STOP_S = 3
"""Seconds open requests get to finish after a stop signal before they are cancelled."""


class RemoteRefused(StoreError):
    """The viewer refused to bind a non-loopback address without an access token."""

    default_hint = (
        "Keep the default --host 127.0.0.1, or add --allow-remote --token T "
        "(and pass the token with every request)."
    )


def is_loopback(host: str) -> bool:
    """Return True for ``localhost`` and loopback IP literals."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, allow_remote: bool, token: str | None) -> GuardConfig:
    """Return the guard settings for a bind, or refuse it.

    Raises:
        RemoteRefused: a non-loopback host without ``allow_remote`` and a token,
            or a token of the wrong form.
    """
    if token is not None and not TOKEN_PATTERN.fullmatch(token):
        raise RemoteRefused(
            "the access token must be 16 to 256 characters of A-Z a-z 0-9 . _ ~ -",
            hint="Make one with: python -c 'import secrets; print(secrets.token_urlsafe(24))'",
        )
    loopback = is_loopback(host)
    if not loopback:
        if not allow_remote:
            raise RemoteRefused(f"refusing to serve on non-loopback address {host!r}")
        if token is None:
            raise RemoteRefused(f"--allow-remote on {host!r} needs --token")
    return GuardConfig(host=host.strip("[]").lower(), port=0, token=token, loopback=loopback)


class _Server(uvicorn.Server):
    """uvicorn's server with our stop: end live streams first, never re-raise the signal."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_stop = on_stop

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_stop()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def serve(
    viewer: Viewer,
    guard: GuardConfig,
    *,
    port: int,
    open_browser: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve ``viewer`` until SIGINT/SIGTERM; closes the store before returning."""
    # --open never puts the token on the browser's command line (other local users
    # can read it): the browser gets a one-time launch code (see sqlstore.ui.security).
    launch = secrets.token_urlsafe(24) if open_browser and guard.token else None
    bound = GuardConfig(
        host=guard.host, port=port, token=guard.token, loopback=guard.loopback, launch=launch
    )
    app = create_app(viewer, bound)
    config = uvicorn.Config(
        app,
        host=guard.host,
        port=port,
        log_level="warning",
        access_log=False,
        server_header=False,
        lifespan="off",
        timeout_graceful_shutdown=GRACEFUL_STOP_S,
    )
    server = _Server(config, viewer.stop)
    display = "localhost" if guard.host in ("0.0.0.0", "::") else url_host(guard.host)
    url = f"http://{display}:{port}/"

    def when_started() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.started:
            announce(f"sqlstore ui: serving {viewer.store.path} read-only at {url} (Ctrl-C stops)")
            if open_browser:
                webbrowser.open(url + (f"?launch={launch}" if launch else ""))

    threading.Thread(target=when_started, name="sqlstore-ui-started", daemon=True).start()
    try:
        server.run()
    finally:
        viewer.stop()
        viewer.store.close()
    announce("sqlstore ui: stopped")
