"""Run the ``sqlstore`` command line: ``python -m sqlstore``."""

from __future__ import annotations

from sqlstore.cli import run

if __name__ == "__main__":
    run()
