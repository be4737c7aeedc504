"""The viewer's guard: one ASGI middleware in front of every route.

It enforces, for every HTTP request, in this order:

1. **Host header** (DNS rebinding): a page of ``evil.example`` that rebinds its
   name to 127.0.0.1 would send ``Host: evil.example``; only the names the
   server was bound as (and, on loopback, ``localhost``/``127.0.0.1``/``[::1]``)
   with the bound port are accepted, anything else gets 421.
2. **Cross-site requests**: a page of another site can make the browser send
   GETs to the viewer (``<img src>``, ``EventSource``, ``fetch``); the Host check
   passes for them. A request the browser marks as coming from elsewhere —
   ``Sec-Fetch-Site: cross-site`` or ``same-site`` (another port of the same
   host is "same-site"), or an ``Origin`` that is not the viewer's own (also
   ``null``) — gets 403, so no other page can hold the live-stream slots or run
   ``check=full``. Direct navigation (a typed URL, a bookmark, ``--open``:
   ``Sec-Fetch-Site: none``), the viewer's own pages (``same-origin``) and
   clients that send neither header (curl, scripts) are served. Browsers
   without ``Sec-Fetch-*`` (Safari before 16.4) send no ``Origin`` on a plain
   ``<img>`` GET, so for them this check covers scripted requests only.
3. **Read-only**: only ``GET`` and ``HEAD``; any other method gets 405, so no
   endpoint can write even by mistake.
4. **Access token** (with ``--token``; required by ``--allow-remote``): the token
   must come with every request, as ``Authorization: Bearer T``, the
   ``sqlstore_token`` cookie, or ``?token=T``. A page request carrying
   ``?token=`` is answered with a redirect to the same URL without it that sets
   the cookie (HttpOnly, SameSite=Strict), so the token leaves the address bar
   and history. ``--open`` hands the browser a one-time ``?launch=`` code
   instead of the token (a browser's command line is visible to every local
   user): its first use within :data:`LAUNCH_TTL_S` sets the cookie the same
   way, and it is worthless after. Compared in constant time. Missing or
   wrong: 401.
5. **Headers on every response**: a strict Content-Security-Policy (scripts,
   styles and connections from this origin only, no inline script or style,
   images from this origin or ``data:``, no frames, no plugins, no base tag),
   ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
   ``X-Frame-Options: DENY``, ``Cache-Control: no-store``.
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""No inline script or style anywhere: stored content cannot run even if escaping failed."""

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

TOKEN_COOKIE = "sqlstore_token"
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,256}")
"""An access token: 16 to 256 URL- and cookie-safe characters."""
LAUNCH_TTL_S = 120.0
"""Seconds the one-time ``?launch=`` code of ``--open`` stays usable."""
CROSS_SITE = ("cross-site", "same-site")
"""``Sec-Fetch-Site`` values of requests another site's page caused."""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def url_host(host: str) -> str:
    """Return ``host`` as it appears in a URL (IPv6 literals in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """What the guard accepts: the bound host and port, and the token (None: no token)."""

    host: str
    port: int
    token: str | None = None
    loopback: bool = True
    launch: str | None = None
    """A one-time code that stands in for the token once (``--open``), or None."""

    def allowed_hosts(self) -> frozenset[str] | None:
        """Return the accepted Host header values, or None when any is (wildcard bind)."""
        if self.host in WILDCARD_HOSTS:
            return None
        names = {url_host(self.host)}
        if self.loopback:
            names.update(LOOPBACK_NAMES)
        return frozenset(f"{n}:{self.port}" for n in names) | (
            frozenset(names) if self.port == 80 else frozenset()
        )


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return ""


def cross_site(scope: Scope, host: str) -> str | None:
    """Return why the browser marks the request as caused by another site, or None."""
    fetch_site = _header(scope, b"sec-fetch-site").strip().lower()
    if fetch_site in CROSS_SITE:
        return f"Sec-Fetch-Site: {fetch_site}"
    origin = _header(scope, b"origin").strip().lower()
    if origin:
        scheme = str(scope.get("scheme", "http"))
        own = f"{scheme}://{host.removesuffix(':80') if scheme == 'http' else host}"
        if origin != own:
            return "Origin is not this viewer"
    return None


def _cookie(scope: Scope, name: str) -> str:
    for part in _header(scope, b"cookie").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


class Guard:
    """ASGI middleware that applies :class:`GuardConfig` to every HTTP request."""

    def __init__(self, app: ASGIApp, config: GuardConfig) -> None:
        self.app = app
        self.config = config
        self._hosts = config.allowed_hosts()
        self._launch = config.launch
        self._launch_until = time.monotonic() + LAUNCH_TTL_S

    def _use_launch(self, given: str) -> bool:
        """True (once) for the ``--open`` code within its lifetime; it is spent either way."""
        if not given:
            return False
        code, self._launch = self._launch, None  # a wrong guess spends it too
        if code is None:
            return False
        return time.monotonic() < self._launch_until and hmac.compare_digest(
            given.encode(), code.encode()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host").lower()
        if self._hosts is not None and host not in self._hosts:
            await _plain(send, 421, "Misdirected request: unexpected Host header.\n")
            return
        why = cross_site(scope, host)
        if why is not None:
            text = f"Cross-site request refused ({why}): open the viewer by its address.\n"
            await _plain(send, 403, text)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, "This viewer is read-only: only GET and HEAD.\n")
            return
        token = self.config.token
        if token is not None:
            query = parse_qsl(bytes(scope.get("query_string", b"")).decode("latin-1"))
            from_query = next((v for k, v in query if k == "token"), "")
            launched = self._use_launch(next((v for k, v in query if k == "launch"), ""))
            bearer = _header(scope, b"authorization").removeprefix("Bearer ").strip()
            given = token if launched else from_query or bearer or _cookie(scope, TOKEN_COOKIE)
            if not hmac.compare_digest(given.encode(), token.encode()):
                await _plain(send, 401, "Access token required (?token=, cookie or Bearer).\n")
                return
            if (from_query or launched) and scope["path"] != "/stream":
                rest = urlencode([(k, v) for k, v in query if k not in ("token", "launch")])
                # One leading slash: "//host/x" would be a redirect to another host.
                path = "/" + str(scope["path"]).lstrip("/\\")
                target = quote(path) + (f"?{rest}" if rest else "")
                await _redirect_with_cookie(send, target, token)
                return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
    ]
    if status == 405:
        headers.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _redirect_with_cookie(send: Send, location: str, token: str) -> None:
    # The token was compared already; TOKEN_PATTERN keeps it a valid cookie value.
    cookie = f"{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", location.encode("ascii")),
        (b"set-cookie", cookie.encode("ascii")),
        *SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
