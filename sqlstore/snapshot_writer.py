"""The snapshot writer: a ``Session`` straight to compact UTF-8 JSON bytes.

:func:`write` gives exactly the bytes of
``json.dumps(to_json(session), ensure_ascii=False, separators=(",", ":"),
allow_nan=False).encode()`` (property-tested against that), without building the
intermediate dicts and without running json's escaper over every character.

Most of a big snapshot is a few long strings (message texts, tool output,
base64 part data). Escaping them character by character was most of the cost of
``save``, so long strings take two shortcuts:

* a string with no ``"``, ``\\`` or control character is its UTF-8 bytes in
  quotes; the check runs at C speed (``in`` per character for ASCII text, one
  ``bytes.translate`` otherwise);
* the JSON text of a long string is kept in a bounded LRU cache keyed by the
  string's value. Strings are immutable, so an entry can never go stale; saving a
  session again after a turn re-escapes only what is new. The cache holds at most
  ``STRING_CACHE_BYTES`` of memory: each entry is charged the full size of the
  key string it keeps alive, of its bytes object, and of its slot in the LRU map
  (checked with ``tracemalloc`` in the tests); a forked child starts with an
  empty cache.

Everything else (numbers, small objects, ``extra`` values) goes through the same
``json`` encoder as before, so the format and its error cases do not change.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any

from sqlstore import clock
from sqlstore.model import JSON, ROLES, Message
from sqlstore.session import Session

STRING_CACHE_BYTES = 32 * 1024 * 1024
"""Memory budget of the long-string cache (key strings, encodings and map slots)."""

_ENTRY_OVERHEAD = 240
"""Bytes an entry costs beyond its key and its bytes: the ``OrderedDict`` slot and
link node, the (bytes, cost) tuple and its int, and the room deleted slots keep
while the cache churns (measured 180-230 with tracemalloc on CPython 3.11)."""

STRING_CACHE_MIN_CHARS = 256
"""Strings shorter than this are escaped by ``json`` each time and never cached."""

_dumps: Callable[[Any], str] = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False
).encode

# What json escapes (with ensure_ascii=False), most frequent first. Every byte of a
# multi-byte UTF-8 sequence is >= 0x80, so looking for them in the UTF-8 bytes is
# the same as looking in the text.
_ESCAPED_CHARS = ("\n", '"', "\\", "\t", "\r", *(chr(c) for c in range(0x20) if c not in b"\n\t\r"))
_ESCAPED_BYTES = "".join(_ESCAPED_CHARS).encode("ascii")

_MESSAGE_KEYS = frozenset(Message.__dataclass_fields__) - {"extra"}
_ROLE_HEADS = {role: b'{"role":"' + role.encode() + b'","text":' for role in ROLES}


def _cost(text: str, encoded: bytes) -> int:
    """Memory one cache entry holds: its key string, its bytes object and its slot.

    A non-ASCII key is charged its UTF-8 form as well (the JSON text is about
    that size): CPython keeps that form with the string once anything asks for
    it (binding the string to SQL does), so the key may grow after it is cached.
    The cost is computed once and stored with the entry, so eviction gives back
    exactly what was charged.
    """
    utf8 = 0 if text.isascii() else len(encoded)
    return sys.getsizeof(text) + utf8 + sys.getsizeof(encoded) + _ENTRY_OVERHEAD


class _StringCache:
    """A thread-safe LRU map from long strings to their JSON text as bytes."""

    def __init__(self, budget_bytes: int) -> None:
        self._budget = budget_bytes
        self._entries: OrderedDict[str, tuple[bytes, int]] = OrderedDict()
        self._used = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> bytes | None:
        """Return the cached JSON text of ``text`` (marking it recently used), or None."""
        with self._lock:
            found = self._entries.get(text)
            if found is None:
                return None
            self._entries.move_to_end(text)
            return found[0]

    def put(self, text: str, encoded: bytes) -> None:
        """Cache ``encoded`` for ``text``, evicting the least recently used over budget."""
        cost = _cost(text, encoded)
        if cost > self._budget // 4:
            return  # one huge string would flush everything else
        with self._lock:
            if text in self._entries:
                return
            self._entries[text] = (encoded, cost)
            self._used += cost
            while self._used > self._budget:
                _, (_, old_cost) = self._entries.popitem(last=False)
                self._used -= old_cost

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self._used = 0

    def stats(self) -> tuple[int, int]:
        """Return (entries, bytes accounted)."""
        with self._lock:
            return len(self._entries), self._used

    def reset_after_fork(self) -> None:
        """Start empty with a new lock: another thread may have held the old one at fork."""
        self._lock = threading.Lock()
        self._entries = OrderedDict()
        self._used = 0


_cache = _StringCache(STRING_CACHE_BYTES)


def _reset_in_forked_child() -> None:
    _cache.reset_after_fork()


os.register_at_fork(after_in_child=_reset_in_forked_child)


def clear_string_cache() -> None:
    """Drop every cached string encoding (memory back; the next save escapes afresh)."""
    _cache.clear()


def string_cache_stats() -> tuple[int, int]:
    """Return (entries, bytes accounted) of the long-string cache."""
    return _cache.stats()


def _string(text: str) -> bytes:
    """Return the JSON string literal of ``text`` as UTF-8 bytes."""
    if len(text) < STRING_CACHE_MIN_CHARS:
        return encode_basestring(text).encode("utf-8") if text else b'""'
    found = _cache.get(text)
    if found is not None:
        return found
    if text.isascii():
        encoded = (
            encode_basestring(text).encode("ascii")
            if _ascii_needs_escape(text)
            else b'"' + text.encode("ascii") + b'"'
        )
    else:
        raw = text.encode("utf-8")  # a lone surrogate raises, as it did after json.dumps
        if len(raw.translate(None, _ESCAPED_BYTES)) == len(raw):
            encoded = b'"' + raw + b'"'
        else:
            encoded = encode_basestring(text).encode("utf-8")
    _cache.put(text, encoded)
    return encoded


def _ascii_needs_escape(text: str) -> bool:
    """True when json would escape a character of ASCII ``text`` ('"', '\\', a control)."""
    # One memchr-speed scan per character beats any single-pass check we have, and
    # prose usually stops at the first one ("\n").
    for char in _ESCAPED_CHARS:  # noqa: SIM110 - any(genexpr) is ~25 % slower here
        if char in text:
            return True
    return False


def _value(value: JSON) -> bytes:
    """Return the JSON text of ``value`` as json.dumps writes it, as UTF-8 bytes."""
    if type(value) is str:
        return _string(value)
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if type(value) is int:
        return int.__repr__(value).encode("ascii")
    return _dumps(value).encode("utf-8")


def _object(doc: object, out: list[bytes]) -> None:
    """Append the JSON object ``doc`` (a ``to_json`` result) to ``out``."""
    if type(doc) is not dict or not all(type(key) is str for key in doc):
        out.append(_dumps(doc).encode("utf-8"))
        return
    sep = b"{"
    for key, value in doc.items():
        out.append(sep)
        out.append(_string(key))
        out.append(b":")
        out.append(_value(value))
        sep = b","
    out.append(b"}" if sep == b"," else b"{}")


def _items(extra: dict[Any, JSON], out: list[bytes]) -> None:
    """Append ``extra``'s members, each after a comma, as ``dict.update`` then dumps would."""
    if extra:
        out.append(b"," + _dumps(dict(extra))[1:-1].encode("utf-8"))


def _list(items: Iterable[Any], out: list[bytes]) -> None:
    """Append a JSON array of the ``to_json()`` of each of ``items``."""
    sep = b"["
    for item in items:
        out.append(sep)
        _object(item.to_json(), out)
        sep = b","
    out.append(b"]" if sep == b"," else b"[]")


def _message(message: Message, out: list[bytes]) -> None:
    """Append ``message`` as ``Message.to_json`` describes it."""
    if type(message) is not Message:
        _object(message.to_json(), out)
        return
    extra = message.extra
    clash = _MESSAGE_KEYS.intersection(extra)
    if clash:
        raise ValueError(f"message extra uses reserved keys {sorted(clash)}")
    role = message.role
    head = _ROLE_HEADS.get(role) if type(role) is str else None
    out.append(head or b'{"role":' + _value(role) + b',"text":')
    out.append(_value(message.text))
    calls, result, parts = message.tool_calls, message.tool_result, message.parts
    if type(calls) is list and type(parts) is list and not calls and not parts and result is None:
        out.append(b',"tool_calls":[],"tool_result":null,"parts":[],"reasoning":')
    else:
        out.append(b',"tool_calls":')
        _list(calls, out)
        out.append(b',"tool_result":')
        if result is None:
            out.append(b"null")
        else:
            _object(result.to_json(), out)
        out.append(b',"parts":')
        _list(parts, out)
        out.append(b',"reasoning":')
    out.append(_value(message.reasoning))
    _items(extra, out)
    out.append(b"}")


def _small(value: object) -> bytes:
    """Return the JSON of a small ``to_json`` object (or null) as UTF-8 bytes."""
    return b"null" if value is None else _dumps(value).encode("utf-8")


def write(session: Session, version: str) -> bytes:
    """Return the snapshot of ``session`` (already validated) with tag ``version``.

    The key order and values are those of ``snapshot.to_json``; keep the two in step.

    Raises:
        ValueError, TypeError, AttributeError, OverflowError: as ``to_json`` or
            ``json.dumps`` would for the same session (the codec wraps them).
    """
    out: list[bytes] = [b'{"v":', _value(version), b',"id":', _value(session.id)]
    out.append(b',"state":')
    out.append(_value(str(session.state)))
    out.append(b',"mode":')
    out.append(_value(session.mode))
    out.append(b',"limits":')
    out.append(_small(session.limits.to_json()))
    out.append(b',"counters":')
    out.append(_small(session.counters.to_json()))
    out.append(b',"usage":')
    out.append(_small(session.usage.to_json()))
    out.append(b',"messages":')
    sep = b"["
    for message in session.messages:
        out.append(sep)
        _message(message, out)
        sep = b","
    out.append(b"]" if sep == b"," else b"[]")
    out.append(b',"created_at":')
    out.append(_value(clock.format_rfc3339(session.created_at)))
    out.append(b',"title":')
    out.append(_value(session.title))
    out.append(b',"provider_id":')
    out.append(_value(session.provider_id))
    out.append(b',"model_id":')
    out.append(_value(session.model_id))
    out.append(b',"kind":')
    out.append(_value(str(session.kind)))
    out.append(b',"relationship":')
    out.append(_small(session.relationship.to_json()))
    out.append(b',"owner":')
    owner = session.owner
    out.append(_small(None if owner is None else owner.to_json()))
    out.append(b',"stop_reason":')
    out.append(_value(session.stop_reason))
    out.append(b',"pending_ask":')
    ask = session.pending_ask
    out.append(_small(None if ask is None else ask.to_json()))
    out.append(b',"last_error":')
    out.append(_value(session.last_error))
    out.append(b',"run_id":')
    out.append(_value(session.run_id))
    out.append(b',"labels":')
    out.append(_small(dict(session.labels)))
    _items(session.extra, out)
    out.append(b"}")
    return b"".join(out)
