"""Retention policy: per kind class, how old and how many sessions may be kept.

A :class:`Policy` holds one :class:`Rule` per kind class — ``main``,
``scheduled`` and ``child`` (subagent, parallel_branch and team_member, each
family capped on its own). A rule is a ``max_age`` (``timedelta(0)`` = off) and a
``max_count`` (``0`` = off). Deleting ``main`` sessions is the user's own work, so
a ``main`` rule that is on needs ``acknowledge_main_deletion=True``.

Policies come from flags (the CLI) or from a TOML file (:func:`load_config`)::

    [retention]
    acknowledge_main_deletion = false
    sweep_every = "1h"          # daemon interval (optional)

    [retention.child]
    max_age = "7d"
    max_count = 500
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlstore.errors import StoreError
from sqlstore.model import CHILD_KINDS, Kind

POLICY_VERSION = 1
"""The only ``version`` a policy file may declare."""

DEFAULT_SWEEP_EVERY = timedelta(hours=1)
"""How often the daemon sweeps when neither the file nor a flag says."""

_DURATION_UNITS_S = {"w": 7 * 86_400, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_DURATION_PART = re.compile(r"([0-9]+)([wdhms])")  # ASCII digits only: int() reads "٣" too
_DURATION_HINT = "Write durations as a number and a unit: 30d, 12h, 90m, 45s, 1w, or 1d12h."


class PolicyError(StoreError, ValueError):
    """A retention policy or policy file is invalid."""

    default_hint = "See docs/retention.md for the policy format."


def parse_duration(text: str) -> timedelta:
    """Parse a duration such as ``30d``, ``12h``, ``90m``, ``45s``, ``1w`` or ``1d12h``.

    ``0`` alone means zero (a rule that is off). Units: w(eeks), d(ays),
    h(ours), m(inutes), s(econds); parts may be combined, largest first or not.

    Raises:
        PolicyError: the text is not a duration.
    """
    raw = text.strip()
    if raw == "0":
        return timedelta(0)
    pos = 0
    seconds = 0
    for match in _DURATION_PART.finditer(raw):
        if match.start() != pos:
            break
        seconds += int(match.group(1)) * _DURATION_UNITS_S[match.group(2)]
        pos = match.end()
    if pos == 0 or pos != len(raw):
        raise PolicyError(f"not a duration: {text!r}", hint=_DURATION_HINT)
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise PolicyError(f"duration too large: {text!r}", hint=_DURATION_HINT) from None


def format_duration(value: timedelta) -> str:
    """Format a duration in the syntax :func:`parse_duration` reads (``0`` for zero).

    Sub-second parts are dropped from the text (they never come from a policy file).
    """
    seconds = int(value.total_seconds())
    if seconds <= 0:
        return "0"
    parts = []
    for unit, size in _DURATION_UNITS_S.items():
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Rule:
    """Limits for one kind class: ``max_age`` (0 = off) and ``max_count`` (0 = off).

    Raises:
        PolicyError: a value is negative or of the wrong type.
    """

    max_age: timedelta = timedelta(0)
    max_count: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.max_age, timedelta):
            raise PolicyError(f"max_age must be a timedelta, not {type(self.max_age).__name__}")
        if isinstance(self.max_count, bool) or not isinstance(self.max_count, int):
            raise PolicyError(f"max_count must be an int, not {type(self.max_count).__name__}")
        if self.max_age < timedelta(0):
            raise PolicyError(f"max_age must be >= 0, got {self.max_age}")
        if self.max_count < 0:
            raise PolicyError(f"max_count must be >= 0, got {self.max_count}")

    @property
    def enabled(self) -> bool:
        """True when at least one limit is on."""
        return self.max_age > timedelta(0) or self.max_count > 0

    def to_json(self) -> dict[str, Any]:
        """Return the rule as JSON (``max_age_us`` is exact integer microseconds)."""
        return {"max_age_us": _micros(self.max_age), "max_count": self.max_count}

    def describe(self) -> str:
        """Return a short human summary such as ``max_age=7d max_count=500`` or ``off``."""
        if not self.enabled:
            return "off"
        return f"max_age={format_duration(self.max_age)} max_count={self.max_count}"


def _micros(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds


@dataclass(frozen=True, slots=True)
class Policy:
    """Which stale sessions retention deletes, per kind class.

    ``child`` applies to subagent, parallel_branch and team_member sessions,
    and each of those kinds is capped on its own (``max_count`` per family).
    ``unknown`` sessions are never deleted.

    Raises:
        PolicyError: the ``main`` rule is on without ``acknowledge_main_deletion=True``.
    """

    main: Rule = field(default_factory=Rule)
    scheduled: Rule = field(default_factory=Rule)
    child: Rule = field(default_factory=Rule)
    acknowledge_main_deletion: bool = False

    def __post_init__(self) -> None:
        for name in ("main", "scheduled", "child"):
            if not isinstance(getattr(self, name), Rule):
                raise PolicyError(f"policy.{name} must be a Rule")
        if self.main.enabled and not self.acknowledge_main_deletion:
            raise PolicyError(
                "the main rule deletes users' own sessions and needs an explicit acknowledgement",
                hint="Set acknowledge_main_deletion = true in [retention] "
                "(CLI: --acknowledge-main-deletion), or turn the main rule off.",
            )

    def rule_for(self, kind: Kind) -> Rule | None:
        """Return the rule governing ``kind``, or None for kinds retention never touches."""
        if kind is Kind.MAIN:
            return self.main
        if kind is Kind.SCHEDULED:
            return self.scheduled
        if kind in CHILD_KINDS:
            return self.child
        return None

    @property
    def enabled(self) -> bool:
        """True when any rule is on."""
        return self.main.enabled or self.scheduled.enabled or self.child.enabled

    def to_json(self) -> dict[str, Any]:
        """Return the policy as canonical JSON-compatible data."""
        return {
            "version": POLICY_VERSION,
            "main": self.main.to_json(),
            "scheduled": self.scheduled.to_json(),
            "child": self.child.to_json(),
            "acknowledge_main_deletion": self.acknowledge_main_deletion,
        }

    @property
    def policy_hash(self) -> str:
        """Return a stable hex sha256 of the policy (same limits → same hash, across runs)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def describe(self) -> str:
        """Return a one-line human summary of every rule."""
        return (
            f"main: {self.main.describe()}; scheduled: {self.scheduled.describe()}; "
            f"child: {self.child.describe()}"
        )


@dataclass(frozen=True, slots=True)
class RetentionConfig:
    """A policy file: the :class:`Policy` and the daemon's sweep interval."""

    policy: Policy
    sweep_every: timedelta = DEFAULT_SWEEP_EVERY


DEFAULT_POLICY = Policy(child=Rule(max_age=timedelta(days=7), max_count=500))
"""The policy used without a policy file: mecatl's defaults (children 7 days, 500 per
family; main and scheduled sessions are kept)."""

DEFAULT_CONFIG = RetentionConfig(policy=DEFAULT_POLICY)
"""The configuration used without a policy file."""

_TOP_KEYS = {"version", "acknowledge_main_deletion", "sweep_every", "main", "scheduled", "child"}
_RULE_KEYS = {"max_age", "max_count"}
_RULE_NAMES = ("main", "scheduled", "child")


def load_config(path: str | os.PathLike[str]) -> RetentionConfig:
    """Read a TOML policy file with a ``[retention]`` table.

    Raises:
        PolicyError: the file cannot be read, is not TOML, has no ``[retention]``
            table, has an unknown key (named in the message), or a bad value.
    """
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise PolicyError(
            f"cannot read policy file {os.fspath(path)!r}: {exc.strerror or exc}",
            hint="Pass an existing TOML file with --config.",
        ) from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"policy file {os.fspath(path)!r} is not valid TOML: {exc}") from exc
    return config_from_mapping(data)


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """Read the :class:`Policy` of a TOML policy file (see :func:`load_config`).

    Raises:
        PolicyError: as :func:`load_config`.
    """
    return load_config(path).policy


def config_from_mapping(data: dict[str, Any]) -> RetentionConfig:
    """Build a :class:`RetentionConfig` from parsed TOML (a dict with a ``retention`` table).

    Raises:
        PolicyError: unknown key (named), missing table, or bad value.
    """
    for key in data:
        if key != "retention":
            raise PolicyError(f"unknown key {key!r} in policy file; only [retention] is allowed")
    table = data.get("retention")
    if not isinstance(table, dict):
        raise PolicyError("policy file has no [retention] table")
    for key in table:
        if key not in _TOP_KEYS:
            raise PolicyError(
                f"unknown key 'retention.{key}' in policy file; "
                f"known keys: {', '.join(sorted(_TOP_KEYS))}"
            )
    version = table.get("version", POLICY_VERSION)
    if isinstance(version, bool) or version != POLICY_VERSION:
        raise PolicyError(f"unsupported retention.version {version!r}; this sqlstore reads 1")
    ack = table.get("acknowledge_main_deletion", False)
    if not isinstance(ack, bool):
        raise PolicyError("retention.acknowledge_main_deletion must be true or false")
    rules = {name: _rule_from(table.get(name, {}), f"retention.{name}") for name in _RULE_NAMES}
    every = _duration_value(table.get("sweep_every", "1h"), "retention.sweep_every")
    if every <= timedelta(0):
        raise PolicyError("retention.sweep_every must be > 0")
    policy = Policy(
        main=rules["main"],
        scheduled=rules["scheduled"],
        child=rules["child"],
        acknowledge_main_deletion=ack,
    )
    return RetentionConfig(policy=policy, sweep_every=every)


def _rule_from(value: object, where: str) -> Rule:
    if not isinstance(value, dict):
        raise PolicyError(f"{where} must be a table")
    for key in value:
        if key not in _RULE_KEYS:
            raise PolicyError(
                f"unknown key '{where}.{key}' in policy file; known keys: max_age, max_count"
            )
    max_age = _duration_value(value.get("max_age", 0), f"{where}.max_age")
    count = value.get("max_count", 0)
    if isinstance(count, bool) or not isinstance(count, int):
        raise PolicyError(f"{where}.max_count must be an integer")
    if count < 0:
        raise PolicyError(f"{where}.max_count must be >= 0, got {count}")
    return Rule(max_age=max_age, max_count=count)


def _duration_value(value: object, where: str) -> timedelta:
    if isinstance(value, int) and not isinstance(value, bool) and value == 0:
        return timedelta(0)
    if not isinstance(value, str):
        raise PolicyError(f'{where} must be a duration string such as "30d" (or 0)')
    try:
        return parse_duration(value)
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc.message}", hint=exc.hint) from None
