"""``sqlstore.cli``: the installed name of the repository's ``cli/`` package.

Installed, the wheel puts ``cli/`` itself here (see pyproject.toml and
docs/architecture.md, "Installed names"). In a repository checkout this file
stands in for it and re-exports ``run`` from the top-level ``cli`` package.
"""

from __future__ import annotations

from cli import run as run

__all__ = ["run"]
