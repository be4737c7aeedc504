"""The wheel ships the viewer: its modules, every template and static file, byte for byte,
and declares the `ui` extra."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UI = ROOT / "sqlstore" / "ui"


def test_wheel_carries_templates_and_static_files(tmp_path: Path) -> None:
    """Every file under sqlstore/ui/templates and static/ is in the wheel unchanged."""
    out = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("*.whl")
    shipped = [p for sub in ("templates", "static") for p in (UI / sub).rglob("*") if p.is_file()]
    assert len(shipped) >= 10
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in shipped:
            name = path.relative_to(ROOT).as_posix()
            assert archive.read(name) == path.read_bytes(), name
        assert "sqlstore/ui/server.py" in names
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    assert "Provides-Extra: ui" in text
    assert "starlette" in text and "uvicorn" in text and "jinja2" in text.lower()
