"""Import JSON Lines stores and run logs into a sqlstore, and export them back (SPEC §6).

* :func:`run_migration` imports a directory of openzot run logs or a mecatl JSONL
  store directory, in bounded, resumable batches (see :mod:`sqlstore.migrate.job`).
* :func:`copy_store` copies every session between two stores (any backends);
* :func:`export_sessions` writes sessions back as run logs or as a mecatl
  ``sid-v2`` store (see :mod:`sqlstore.migrate.export`).

The on-disk formats and their mapping to sessions are in ``docs/formats.md``.
"""

from __future__ import annotations

from sqlstore.migrate.copy import CopyReport, copy_store
from sqlstore.migrate.export import ExportReport, export_sessions
from sqlstore.migrate.items import FORMAT_MECATL, FORMAT_RUNLOG, FORMATS
from sqlstore.migrate.job import (
    MIGRATE_BATCH_SESSIONS,
    MIGRATE_BATCH_SESSIONS_MAX,
    detect_format,
    job_id_for,
    run_migration,
)
from sqlstore.migrate.report import ItemOutcome, MigrationReport

__all__ = [
    "FORMATS",
    "FORMAT_MECATL",
    "FORMAT_RUNLOG",
    "MIGRATE_BATCH_SESSIONS",
    "MIGRATE_BATCH_SESSIONS_MAX",
    "CopyReport",
    "ExportReport",
    "ItemOutcome",
    "MigrationReport",
    "copy_store",
    "detect_format",
    "export_sessions",
    "job_id_for",
    "run_migration",
]
