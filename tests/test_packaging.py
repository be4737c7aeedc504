"""The built wheel, installed into a fresh venv: collision-free import names and the console script.

The wheel installs one top-level package, ``sqlstore``; the repository's
``retention/`` and ``cli/`` ship as ``sqlstore.retention`` and ``sqlstore.cli``
(docs/architecture.md, "Installed names"), so a user's own ``cli`` or
``retention`` package neither shadows ours nor is shadowed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run a command with a clean environment (no PYTHONPATH leaking the checkout in)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SQLSTORE_DB")}
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kwargs
    )  # type: ignore[call-overload, no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout."""
    dist = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(dist)], ROOT)
    assert built.returncode == 0, built.stderr
    (found,) = dist.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Iterator[Path]:
    """A fresh venv with the built wheel installed (runtime deps linked in); its bin/."""
    base = tmp_path_factory.mktemp("wheel")
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    # apsw and click come from this interpreter (no network): a .pth names a directory
    # holding only them, so nothing of the checkout is on the new venv's path.
    deps = base / "deps"
    deps.mkdir()
    for name in ("apsw", "click"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        (deps / name).symlink_to(Path(spec.origin).parent)
    site = _run([str(python), "-c", "import site; print(site.getsitepackages()[0])"], base)
    Path(site.stdout.strip(), "runtime-deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    pip = _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], base
    )
    assert pip.returncode == 0, pip.stderr
    yield env_dir / "bin"


def test_wheel_has_one_top_level_package(wheel: Path) -> None:
    """Only ``sqlstore/`` and its dist-info are at the wheel's top: no ``cli``, no ``retention``."""
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
        names = set(archive.namelist())
        init = archive.read("sqlstore/retention/__init__.py").decode()
    assert tops == {"sqlstore", "sqlstore-0.1.0.dist-info"}
    assert {"sqlstore/retention/sweep.py", "sqlstore/cli/main.py", "sqlstore/schema.sql"} <= names
    # The real package was shipped under the new name, not the checkout's alias.
    assert init == (ROOT / "retention" / "__init__.py").read_text(encoding="utf-8")
    assert not [n for n in names if "__pycache__" in n]


def test_installed_names_are_collision_free(installed: Path, tmp_path: Path) -> None:
    """Installed, ``sqlstore.retention`` and ``sqlstore.cli`` import; top-level names stay free."""
    probe = (
        "import json, importlib.util, sqlstore, sqlstore.retention as r, sqlstore.cli\n"
        "from sqlstore.retention import Rule, Policy, plan, sweep, load_policy, PolicyError\n"
        "print(json.dumps({'retention': r.__file__, 'cli': sqlstore.cli.__file__,\n"
        "  'top': [importlib.util.find_spec(n) is None for n in ('retention', 'cli')]}))\n"
    )
    done = _run([str(installed / "python"), "-c", probe], tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    site = str(installed.parent / "lib")
    assert found["retention"].startswith(site) and found["cli"].startswith(site)
    assert found["top"] == [True, True]


def test_a_users_own_cli_package_and_ours_coexist(installed: Path, tmp_path: Path) -> None:
    """A project with its own ``cli`` and ``retention`` packages keeps them, and ours still runs."""
    for name in ("cli", "retention"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"MINE = {name!r}\n", encoding="utf-8")
    probe = (
        "import cli, retention, sqlstore.cli, sqlstore.retention; print(cli.MINE, retention.MINE)"
    )
    done = _run([str(installed / "python"), "-c", probe], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cli", "retention"]
    # The console script, started from inside that project, is still ours.
    init = _run([str(installed / "sqlstore"), "--db", "mine.db", "init"], tmp_path)
    assert init.returncode == 0, init.stderr
    listed = _run([str(installed / "sqlstore"), "ls", "--db", "mine.db", "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_installed_console_script_and_module_run(installed: Path, tmp_path: Path) -> None:
    """The ``sqlstore`` script and ``python -m sqlstore`` both run the installed CLI."""
    version = _run([str(installed / "sqlstore"), "--version"], tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == "sqlstore, version 0.1.0"
    module = _run([str(installed / "python"), "-m", "sqlstore", "--help"], tmp_path)
    assert module.returncode == 0, module.stderr
    assert "Usage: sqlstore" in module.stdout
