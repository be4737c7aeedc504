"""Time: reading the clock at call time, and converting timestamps.

The clock is always read inside a function body (never at import, never stored),
so freezegun controls every timestamp sqlstore writes.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(Z|z|[+-]\d{2}:\d{2})$"
)


def now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


def now_ns() -> int:
    """Return the current time as integer nanoseconds since the Unix epoch."""
    return time.time_ns()


MAX_LEASE_TTL = timedelta(days=36_525)
"""Longest lease accepted (100 years): every backend stores expiry as 64-bit nanoseconds,
which end in 2262, so a longer TTL would overflow on one backend and not another."""


def ttl_ns(ttl: timedelta) -> int:
    """Return a positive TTL of at most ``MAX_LEASE_TTL`` in nanoseconds.

    Raises:
        ValueError: ``ttl`` is not positive, or longer than ``MAX_LEASE_TTL``.
    """
    if ttl > MAX_LEASE_TTL:
        raise ValueError(f"lease ttl {ttl} is too long; the limit is {MAX_LEASE_TTL.days} days")
    ns = int(ttl.total_seconds() * 1_000_000_000)
    if ns <= 0:
        raise ValueError("lease ttl must be positive")
    return ns


def to_ns(moment: datetime) -> int:
    """Convert an aware datetime to integer nanoseconds since the epoch (exact to 1 µs)."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: sqlstore needs timezone-aware UTC times")
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def from_ns(ns: int) -> datetime:
    """Convert integer nanoseconds since the epoch to an aware UTC datetime (µs precision)."""
    return _EPOCH + timedelta(microseconds=ns // 1_000)


def format_rfc3339(moment: datetime) -> str:
    """Format an aware datetime as RFC 3339 in UTC with microseconds and a `Z`."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime: sqlstore needs timezone-aware UTC times")
    utc = moment.astimezone(UTC)
    # Not strftime("%Y"): glibc does not zero-pad years below 1000.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond:06d}Z"
    )


def parse_rfc3339(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (up to nanoseconds) into an aware UTC datetime.

    Digits below a microsecond are dropped.

    Raises:
        ValueError: the text is not an RFC 3339 timestamp.
    """
    if _is_canonical_shape(text):
        # The form format_rfc3339 writes: datetime.fromisoformat reads it (ASCII
        # digits only) to the same value several times faster than the regex path.
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass  # out of range (month 13, day 31 of a 30-day month): reported below
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    year, month, day, hour, minute, second, frac, zone = match.groups()
    micro = int((frac or "0")[:6].ljust(6, "0"))
    parsed = datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), micro, tzinfo=UTC
    )
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
        try:
            parsed -= sign * offset
        except OverflowError:
            raise ValueError(f"timestamp out of range in UTC: {text!r}") from None
    return parsed


def _is_canonical_shape(text: str) -> bool:
    """True for ASCII ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (digits unchecked), hour not ``24``."""
    return (
        len(text) == _CANONICAL_LENGTH
        and text[26] == "Z"
        and text[19] == "."
        and text[10] == "T"
        and text[4] == "-"
        and text[7] == "-"
        and text[13] == ":"
        and text[16] == ":"
        and text[11:13] != "24"
        and text.isascii()
    )


_CANONICAL_LENGTH = len("2000-01-01T00:00:00.000000Z")
