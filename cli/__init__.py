"""The ``sqlstore`` command line (click); installed as ``sqlstore.cli``.

Modules here import each other relatively and reach retention as
``sqlstore.retention``, so the package works under both names (see
docs/architecture.md, "Installed names").
"""

from __future__ import annotations


def run() -> None:
    """Run the console script ``sqlstore`` (also ``python -m sqlstore``)."""
    from .main import main

    main()
