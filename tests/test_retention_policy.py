"""Retention policy: rules, acknowledgement, durations, TOML files, hash."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from retention import (
    Policy,
    PolicyError,
    Rule,
    format_duration,
    load_config,
    load_policy,
    parse_duration,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("1w", timedelta(weeks=1)),
        ("45s", timedelta(seconds=45)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("0", timedelta(0)),
        (" 7d ", timedelta(days=7)),
    ],
)
def test_parse_duration_accepts_units(text: str, expected: timedelta) -> None:
    """Durations with w/d/h/m/s units, combined or alone, parse exactly."""
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "d", "3x", "-1d", "1.5h", "1d 2h", "1D", "1dd"])
def test_parse_duration_rejects_garbage(text: str) -> None:
    """Anything that is not number+unit raises PolicyError, a ValueError with a hint."""
    with pytest.raises(PolicyError) as info:
        parse_duration(text)
    assert isinstance(info.value, ValueError)
    assert "30d" in info.value.hint


def test_format_duration_round_trips() -> None:
    """format_duration writes what parse_duration reads back."""
    for value in (timedelta(0), timedelta(days=8, hours=3), timedelta(minutes=90)):
        assert parse_duration(format_duration(value)) == value
    assert format_duration(timedelta(days=14)) == "2w"


def test_rule_rejects_negative_values() -> None:
    """A negative max_age or max_count is refused at construction."""
    with pytest.raises(PolicyError):
        Rule(max_age=timedelta(seconds=-1))
    with pytest.raises(PolicyError):
        Rule(max_count=-1)


def test_rule_rejects_wrong_types() -> None:
    """A bool count or a non-timedelta age is refused."""
    with pytest.raises(PolicyError):
        Rule(max_count=True)
    with pytest.raises(PolicyError):
        Rule(max_age=30)  # type: ignore[arg-type]


def test_main_rule_needs_acknowledgement() -> None:
    """A main rule that is on without acknowledge_main_deletion raises PolicyError."""
    with pytest.raises(PolicyError, match="acknowledge") as info:
        Policy(main=Rule(max_age=timedelta(days=30)))
    assert isinstance(info.value, ValueError)
    assert "--acknowledge-main-deletion" in info.value.hint
    with pytest.raises(PolicyError):
        Policy(main=Rule(max_count=10))
    Policy(main=Rule(max_count=10), acknowledge_main_deletion=True)


def test_off_main_rule_needs_no_acknowledgement() -> None:
    """Policies without a main rule construct without acknowledgement."""
    policy = Policy(child=Rule(max_age=timedelta(days=7)))
    assert policy.enabled
    assert not Policy().enabled


def test_policy_hash_is_stable_and_sensitive() -> None:
    """Equal policies hash equally (a fixed value); any limit change changes the hash."""
    a = Policy(child=Rule(max_age=timedelta(days=7), max_count=500))
    b = Policy(child=Rule(max_age=timedelta(days=7), max_count=500))
    assert a.policy_hash == b.policy_hash
    assert len(a.policy_hash) == 64
    assert a.policy_hash != Policy(child=Rule(max_age=timedelta(days=7))).policy_hash
    assert (
        a.policy_hash
        != Policy(scheduled=Rule(max_age=timedelta(days=7), max_count=500)).policy_hash
    )


def write(tmp_path: Path, text: str) -> Path:
    """Write a policy file and return its path."""
    path = tmp_path / "retention.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_policy_reads_every_field(tmp_path: Path) -> None:
    """A full policy file yields the matching Policy and sweep interval."""
    path = write(
        tmp_path,
        """
[retention]
version = 1
acknowledge_main_deletion = true
sweep_every = "30m"

[retention.main]
max_age = "90d"
max_count = 0

[retention.scheduled]
max_age = "7d"

[retention.child]
max_age = "1w"
max_count = 500
""",
    )
    config = load_config(path)
    assert config.sweep_every == timedelta(minutes=30)
    assert config.policy == Policy(
        main=Rule(max_age=timedelta(days=90)),
        scheduled=Rule(max_age=timedelta(days=7)),
        child=Rule(max_age=timedelta(weeks=1), max_count=500),
        acknowledge_main_deletion=True,
    )
    assert load_policy(path) == config.policy


def test_load_policy_defaults(tmp_path: Path) -> None:
    """An empty [retention] table is an all-off policy with an hourly sweep."""
    config = load_config(write(tmp_path, "[retention]\n"))
    assert config.policy == Policy()
    assert config.sweep_every == timedelta(hours=1)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[retention]\nmax_age = '1d'\n", "retention.max_age"),
        ("[retention.child]\nmax_ag = '1d'\n", "retention.child.max_ag"),
        ("[retention.children]\nmax_age = '1d'\n", "retention.children"),
        ("[retention]\n[other]\nx = 1\n", "'other'"),
    ],
)
def test_unknown_keys_are_named(tmp_path: Path, text: str, named: str) -> None:
    """An unknown key anywhere fails loading with the key in the message."""
    with pytest.raises(PolicyError, match=named.replace(".", r"\.")):
        load_policy(write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no [retention] table"),
        ("[retention]\nversion = 2\n", "version"),
        ("[retention.child]\nmax_age = 'soon'\n", "retention.child.max_age"),
        ("[retention.child]\nmax_age = 5\n", "retention.child.max_age"),
        ("[retention.child]\nmax_count = -1\n", "max_count"),
        ("[retention.child]\nmax_count = '5'\n", "max_count"),
        ("[retention]\nacknowledge_main_deletion = 'yes'\n", "acknowledge"),
        ("[retention]\nsweep_every = '0'\n", "sweep_every"),
        ("[retention.main]\nmax_age = '30d'\n", "acknowledge"),
        ("[retention\n", "not valid TOML"),
    ],
)
def test_bad_files_fail_clearly(tmp_path: Path, text: str, fragment: str) -> None:
    """Bad values, versions, syntax and an unacknowledged main rule raise PolicyError."""
    with pytest.raises(PolicyError, match=fragment.replace("[", r"\[").replace(".", r"\.")):
        load_policy(write(tmp_path, text))


def test_missing_file_fails_clearly(tmp_path: Path) -> None:
    """A missing policy file raises PolicyError naming the path."""
    with pytest.raises(PolicyError, match=r"nope\.toml"):
        load_policy(tmp_path / "nope.toml")


def test_zero_integer_age_means_off(tmp_path: Path) -> None:
    """`max_age = 0` (an integer) turns the age limit off."""
    policy = load_policy(write(tmp_path, "[retention.child]\nmax_age = 0\nmax_count = 3\n"))
    assert policy.child == Rule(max_count=3)
