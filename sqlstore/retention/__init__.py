"""``sqlstore.retention``: the installed name of the repository's ``retention/`` package.

Installed, the wheel puts ``retention/`` itself here (see pyproject.toml and
docs/architecture.md, "Installed names"). In a repository checkout this file
stands in for it and re-exports the top-level ``retention`` package, so both
names give the same objects (no second copy of any module).
"""

from __future__ import annotations

from retention import *  # noqa: F403  (the alias re-exports the whole public surface)
from retention import __all__ as __all__
