"""Options of a SQLite store, as keywords or in a ``sqlite:///`` URL, checked before any file.

``sqlstore.open("sqlite:///sessions.db?durability=normal&busy_timeout_ms=200")``
is ``SQLiteStore("sessions.db", durability="normal", busy_timeout_ms=200)``.
In a ``sqlite:///`` URL the first ``?`` starts the options (``name=value``
pairs joined by ``&``); the path before it is taken as written (no
percent-decoding), so a file whose name holds a ``?`` is opened by its plain
path, not by URL. An unknown name, a name given twice (in the URL, or in the
URL and as a keyword), a pair without ``=`` or an invalid value raises
:class:`~sqlstore.errors.InvalidOption` naming the option and what it accepts,
and nothing is created: the options are checked before the path is touched.
"""

from __future__ import annotations

from typing import Any

from sqlstore.errors import InvalidOption

DURABILITIES = ("full", "normal")
"""The values of ``durability``."""

URL_OPTIONS = ("durability", "busy_timeout_ms")
"""The options a ``sqlite:///`` URL may carry."""

SQLITE_URL_PREFIX = "sqlite:///"


def check_store_options(durability: object, busy_timeout_ms: object) -> None:
    """Raise :class:`InvalidOption` unless both options are valid values.

    ``durability`` is ``"full"`` or ``"normal"``; ``busy_timeout_ms`` an ``int``
    (not a bool) of 0 or more.
    """
    if durability not in DURABILITIES:
        raise InvalidOption(
            f"durability must be 'full' or 'normal', not {durability!r}",
            hint="'full' survives power loss; 'normal' is faster (see the SQLiteStore docs).",
        )
    if (
        isinstance(busy_timeout_ms, bool)
        or not isinstance(busy_timeout_ms, int)
        or busy_timeout_ms < 0
    ):
        raise InvalidOption(
            f"busy_timeout_ms must be a whole number of milliseconds (0 or more), "
            f"not {busy_timeout_ms!r}",
            hint="For example busy_timeout_ms=5000 (the default).",
        )


def parse_sqlite_url(url: str) -> tuple[str, dict[str, Any]]:
    """Split ``sqlite:///path?name=value&...`` into the path and checked options.

    Raises:
        InvalidOption: an unknown, repeated or malformed option, or an invalid value.
    """
    rest = url[len(SQLITE_URL_PREFIX) :] if url.startswith(SQLITE_URL_PREFIX) else url
    path, sep, query = rest.partition("?")
    options: dict[str, Any] = {}
    if not sep:
        return path, options
    allowed = ", ".join(URL_OPTIONS)
    for pair in query.split("&"):
        name, eq, value = pair.partition("=")
        if not eq:
            raise InvalidOption(
                f"store URL option {pair!r} has no value",
                hint=f"Write name=value pairs joined by '&'; the options are {allowed}.",
            )
        if name not in URL_OPTIONS:
            raise InvalidOption(
                f"unknown store URL option {name!r}",
                hint=f"The options are {allowed}; a file named with '?' is opened by its path.",
            )
        if name in options:
            raise InvalidOption(f"store URL option {name!r} is given twice")
        if name == "busy_timeout_ms":
            if not (value.isascii() and value.isdigit()):
                raise InvalidOption(
                    f"busy_timeout_ms must be a whole number of milliseconds, not {value!r}",
                    hint="For example busy_timeout_ms=5000 (the default).",
                )
            options[name] = int(value)
        else:
            options[name] = value
    check_store_options(
        options.get("durability", DURABILITIES[0]), options.get("busy_timeout_ms", 0)
    )
    return path, options


def merge_options(from_url: dict[str, Any], keywords: dict[str, Any]) -> dict[str, Any]:
    """Join URL options and keyword options; the same option in both is an error."""
    both = sorted(set(from_url) & set(keywords))
    if both:
        raise InvalidOption(
            f"option {both[0]!r} is given both in the store URL and as a keyword",
            hint="Give each option once.",
        )
    return {**from_url, **keywords}
