"""The user guide stays true: its Python examples run, and it documents every CLI command."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from cli.main import cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDE = DOCS / "guide.md"


def python_blocks(text: str) -> list[str]:
    """Return the bodies of the ```python fences of a Markdown text."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize(("page", "minimum"), [("guide.md", 8), ("index.md", 1)])
def test_python_examples_run(
    page: str, minimum: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Python block of a docs page runs, in order, in one namespace, in a fresh directory."""
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks((DOCS / page).read_text(encoding="utf-8"))
    assert len(blocks) >= minimum
    namespace: dict[str, object] = {"__name__": "docs"}
    for number, block in enumerate(blocks, start=1):
        code = compile(block, f"docs/{page} block {number}", "exec")
        exec(code, namespace)  # running our own documentation examples


def test_guide_documents_every_command() -> None:
    """docs/guide.md names every top-level command and every subcommand."""
    text = GUIDE.read_text(encoding="utf-8")
    for name, command in cli.commands.items():
        assert f"sqlstore {name}" in text, name
        if isinstance(command, click.Group):
            for sub in command.commands:
                assert f"{name} {sub}" in text, f"{name} {sub}"


def test_docs_links_resolve() -> None:
    """Relative links of the guide, operations and index pages point at existing docs."""
    for page in ("guide.md", "operations.md", "index.md"):
        text = (DOCS / page).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([a-z_\-]+\.md)(?:#[a-z0-9\-]+)?\)", text):
            assert (DOCS / target).exists(), target
