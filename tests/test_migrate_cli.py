"""``sqlstore migrate`` and ``sqlstore export`` through click's CliRunner."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from cli.main import cli
from sqlstore import SQLiteStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(db: Path, *args: str) -> tuple[int, str, str]:
    """Invoke the CLI with --db and return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_migrate_prints_a_summary_and_exits_0(tmp_path: Path) -> None:
    """A clean import prints the summary table (no progress bar off a terminal) and exits 0."""
    code, out, _ = run(tmp_path / "s.db", "migrate", str(EXAMPLES / "runlogs"))
    assert code == 0
    assert "imported         4" in out and "MB/s" in out and "torn final line" in out
    assert "Importing" not in out
    with SQLiteStore(tmp_path / "s.db", create=False) as store:
        assert len(store.sessions.list()) == 4


def test_migrate_json_and_rerun_is_idempotent(tmp_path: Path) -> None:
    """--json prints the report; the same command again imports nothing."""
    db = tmp_path / "s.db"
    code, out, _ = run(db, "migrate", str(EXAMPLES / "mecatl-store"), "--json", "--verify")
    doc = json.loads(out)
    assert code == 0 and doc["imported"] == 3 and doc["verified"] == 3
    code, out, _ = run(db, "--json", "migrate", str(EXAMPLES / "mecatl-store"))
    assert code == 0 and json.loads(out)["skipped"]["already_imported"] == 3


def test_dry_run_never_creates_the_database(tmp_path: Path) -> None:
    """--dry-run on a missing --db reports what would be imported and creates no file."""
    db = tmp_path / "none.db"
    code, out, _ = run(db, "migrate", str(EXAMPLES / "runlogs"), "--dry-run", "--json")
    assert code == 0 and json.loads(out)["imported"] == 4
    assert not db.exists()


def test_a_failed_item_exits_1_and_is_listed(tmp_path: Path) -> None:
    """An item that cannot be mapped makes the command exit 1 and names it."""
    folder = tmp_path / "src" / "sid-v2"
    folder.mkdir(parents=True)
    envelope = {"v": "sessnap-current-json/2", "modified_at": "2026-11-29T10:00:00Z"}
    (folder / "sid-v2-x-0.session.json").write_text(json.dumps({**envelope, "snapshot": {}}))
    code, out, _ = run(tmp_path / "s.db", "migrate", str(tmp_path / "src"))
    assert code == 1 and "failed: sid-v2/sid-v2-x-0" in out


def test_bad_batch_and_format_are_usage_errors(tmp_path: Path) -> None:
    """--batch outside 1..100 and an unknown --format exit 2."""
    assert run(tmp_path / "s.db", "migrate", str(EXAMPLES / "runlogs"), "--batch", "101")[0] == 2
    assert run(tmp_path / "s.db", "migrate", str(EXAMPLES / "runlogs"), "--format", "x")[0] == 2


def test_export_all_and_selected_sessions(tmp_path: Path) -> None:
    """export --all writes every session; --session writes only the named ones."""
    db = tmp_path / "s.db"
    run(db, "migrate", str(EXAMPLES / "runlogs"))
    code, out, _ = run(db, "export", "--format", "runlog", "--out", str(tmp_path / "all"), "--all")
    assert code == 0 and "Exported 4 session(s)" in out
    assert len(list((tmp_path / "all").glob("*.jsonl"))) == 4
    code, out, _ = run(
        db,
        "--json",
        "export",
        "--format",
        "mecatl",
        "--out",
        str(tmp_path / "one"),
        "--session",
        "20261129-140501",
    )
    assert code == 0 and json.loads(out)["exported"] == ["20261129-140501"]
    assert len(list((tmp_path / "one" / "sid-v2").glob("*.session.json"))) == 1


def test_export_needs_all_or_session_and_exits_1_on_failures(tmp_path: Path) -> None:
    """Neither/both of --all and --session is a usage error; an unknown id exits 1."""
    db = tmp_path / "s.db"
    run(db, "migrate", str(EXAMPLES / "runlogs"))
    out_dir = str(tmp_path / "o")
    assert run(db, "export", "--format", "runlog", "--out", out_dir)[0] == 2
    both = run(db, "export", "--format", "runlog", "--out", out_dir, "--all", "--session", "x")
    assert both[0] == 2
    code, out, _ = run(db, "export", "--format", "runlog", "--out", out_dir, "--session", "nope")
    assert code == 1 and "failed: nope" in out


def test_export_on_a_missing_database_is_an_error_not_a_new_file(tmp_path: Path) -> None:
    """export never creates the database; it exits 1 with a hint."""
    db = tmp_path / "missing.db"
    code, _, err = run(db, "export", "--format", "runlog", "--out", str(tmp_path / "o"), "--all")
    assert code == 1 and "Hint:" in err and not db.exists()


def test_help_has_examples() -> None:
    """Both commands document an example in --help."""
    for command in ("migrate", "export"):
        result = CliRunner().invoke(cli, [command, "--help"])
        assert result.exit_code == 0 and "Example" in result.output


def test_progress_bar_appears_only_on_a_terminal(tmp_path: Path) -> None:
    """On a pseudo-terminal the import shows a progress bar; piped output has none."""
    repo = Path(__file__).resolve().parents[1]
    command = [
        sys.executable,
        "-c",
        "from cli.main import main; main()",
        "--db",
        str(tmp_path / "s.db"),
        "migrate",
        str(EXAMPLES / "runlogs"),
    ]
    master, slave = pty.openpty()
    child = subprocess.Popen(command, cwd=repo, stdout=slave, stderr=slave, stdin=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO once the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert child.wait(timeout=60) == 0
    assert b"Importing" in b"".join(chunks)
    piped = subprocess.run([*command, "--overwrite"], cwd=repo, capture_output=True, check=True)
    assert b"Importing" not in piped.stdout + piped.stderr
