"""Store options (keywords, ``sqlite:///`` URLs, ``--db``) and failed opens: nothing is created."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqlstore
from cli.main import cli
from sqlstore import Session, SQLiteStore
from sqlstore.errors import InvalidOption, StoreError
from tests.test_cli_process import console_script, env_without_db

BAD_URLS = [
    ("sqlite:///x.db?durability=bogus", "'full' or 'normal'"),
    ("sqlite:///x.db?bogus=1", "unknown store URL option 'bogus'"),
    ("sqlite:///x.db?durability", "has no value"),
    ("sqlite:///x.db?busy_timeout_ms=٣", "whole number"),
    ("sqlite:///x.db?busy_timeout_ms=-1", "whole number"),
    ("sqlite:///x.db?durability=full&durability=normal", "given twice"),
    ("sqlite:///sub/x.db?durability=FULL", "'full' or 'normal'"),
]


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(("url", "message"), BAD_URLS)
def test_a_bad_url_option_is_an_error_and_creates_nothing(
    url: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlstore.open of a URL with a bad option raises InvalidOption naming it; no file appears."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidOption, match=message) as caught:
        sqlstore.open(url)
    assert isinstance(caught.value, ValueError)
    assert _tree(tmp_path) == []


@pytest.mark.parametrize(
    "options", [{"durability": "bogus"}, {"busy_timeout_ms": -5}, {"busy_timeout_ms": "10"}]
)
def test_a_bad_keyword_option_creates_nothing(tmp_path: Path, options: dict[str, object]) -> None:
    """SQLiteStore with an invalid durability or busy timeout creates neither file nor directory."""
    with pytest.raises(InvalidOption):
        SQLiteStore(tmp_path / "new" / "x.db", **options)  # type: ignore[arg-type]
    assert _tree(tmp_path) == []


def test_url_options_are_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Valid URL options reach the store; the same option as a keyword too is refused."""
    monkeypatch.chdir(tmp_path)
    with sqlstore.open("sqlite:///s.db?durability=normal&busy_timeout_ms=250") as store:
        assert isinstance(store, SQLiteStore)
        assert (store.db.durability, store.db.busy_timeout_ms) == ("normal", 250)
        store.sessions.save(Session.new("a"))
    assert _tree(tmp_path) == ["s.db"]
    with pytest.raises(InvalidOption, match="both in the store URL and as a keyword"):
        sqlstore.open("sqlite:///s.db?durability=normal", durability="full")


@pytest.mark.parametrize(("url", "message"), BAD_URLS)
def test_cli_db_url_with_a_bad_option_is_a_usage_error(
    url: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--db URL` with a bad option exits 2 naming it, before or after the command; nothing made."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (["--db", url, "init"], ["init", "--db", url]):
        done = runner.invoke(cli, args, env={"SQLSTORE_DB": None})
        assert done.exit_code == 2, done.output
        assert message in done.output and "--db" in done.output
    done = runner.invoke(cli, ["ls"], env={"SQLSTORE_DB": url})
    assert done.exit_code == 2 and message in done.output
    assert _tree(tmp_path) == []


def test_cli_db_takes_a_sqlite_url_and_refuses_other_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--db sqlite:///s.db` is the file s.db; redis:// or sqlite://host is a usage error."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    made = runner.invoke(cli, ["--db", "sqlite:///s.db?durability=normal", "init"])
    assert made.exit_code == 0, made.output
    assert _tree(tmp_path) == ["s.db"]
    listed = runner.invoke(cli, ["--json", "ls", "--db", "sqlite:///s.db"])
    assert listed.exit_code == 0, listed.output
    for url in ("redis://localhost:6379/0", "sqlite://host/x.db", "sqlite:x.db"):
        done = runner.invoke(cli, ["--db", url, "init"])
        assert done.exit_code == 2 and "not a SQLite file" in done.output, done.output
    bad_to = runner.invoke(
        cli, ["--db", "s.db", "migrate", "--to", "sqlite:///t.db?bogus=1", "--dry-run"]
    )
    assert bad_to.exit_code == 2 and "unknown store URL option 'bogus'" in bad_to.output
    assert [p for p in _tree(tmp_path) if not p.startswith("s.db")] == []


def test_console_script_refuses_a_bad_db_option(tmp_path: Path) -> None:
    """The installed `sqlstore` exits 2 on `--db sqlite:///x.db?durability=bogus`; no file made."""
    done = subprocess.run(
        [console_script(), "--db", "sqlite:///x.db?durability=bogus", "init"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env_without_db(),
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "durability must be 'full' or 'normal', not 'bogus'" in done.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "name", ["new/deeper/" + "a" * 300 + ".db", "new/deeper/x.db/", "new/deeper/x.db\udcff"]
)
def test_a_failed_open_leaves_no_new_directory(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that cannot be created (name too long, a trailing slash, not UTF-8): no directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    with pytest.raises(StoreError):
        sqlstore.open(name)
    with pytest.raises(StoreError):
        sqlstore.open("kept/" + name)  # an existing directory stays, with nothing in it
    assert _tree(tmp_path) == ["kept"]


def test_missing_directories_are_created_private(tmp_path: Path) -> None:
    """A path under missing directories creates them (SPEC 4.1: directory 0700), as documented."""
    with SQLiteStore(tmp_path / "a" / "b" / "s.db"):
        pass
    assert [oct((tmp_path / d).stat().st_mode & 0o777) for d in ("a", "a/b")] == ["0o700"] * 2
