"""Where an import writes: one batch of sessions and checkpoint rows per transaction.

A backend supports migration by offering an :class:`ImportTarget`:
``SQLiteStore`` through :mod:`sqlstore.sqlite.imports` (rows in the
``migrations``/``migration_items`` tables, one ``BEGIN IMMEDIATE`` transaction per
batch), ``MemoryStore`` through :mod:`sqlstore.migrate.memory_target` (the same
contract, nothing persists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlstore.errors import MigrationError
from sqlstore.migrate.items import Fingerprint, SessionImport


@dataclass(frozen=True, slots=True)
class ItemRow:
    """One ``migration_items`` row: a source item, its fingerprint and its outcome."""

    item: str
    fingerprint: Fingerprint
    outcome: str
    session_id: str | None = None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class BatchEntry:
    """One item of a batch: its checkpoint row, and the session to write when importing."""

    row: ItemRow
    payload: SessionImport | None = None


class ImportTarget(Protocol):
    """The write side of a migration job."""

    def load_items(self, job_id: str) -> dict[str, ItemRow]:
        """Return the checkpoint rows of a job (empty for a new job)."""

    def exists(self, session_id: str) -> bool:
        """True when anything (snapshot, event log, audit rows) is stored under the id."""

    def start_job(self, job_id: str, source: str, fmt: str, now_ns: int) -> None:
        """Record the job as running (kept as is when it already exists)."""

    def write_batch(
        self, job_id: str, entries: list[BatchEntry], *, overwrite: bool, now_ns: int
    ) -> list[str]:
        """Write every entry and its checkpoint row in one transaction; return final outcomes.

        An entry with a payload whose session id already holds anything (see
        :meth:`exists`) is written as ``exists`` (payload dropped) unless
        ``overwrite``; then the old snapshot, events and audit rows are replaced
        (and a replaced log gets a new generation).
        """

    def finish_job(self, job_id: str, state: str, now_ns: int) -> None:
        """Record the job's final state."""


def target_for(store: object) -> ImportTarget:
    """Return the import target of a store.

    A backend outside this package plugs in by giving its store an
    ``import_target()`` method that returns an :class:`ImportTarget`.

    Raises:
        MigrationError: the backend does not support imports.
    """
    from sqlstore.memory import MemoryStore
    from sqlstore.sqlite import SQLiteStore

    factory = getattr(store, "import_target", None)
    if callable(factory):
        target: ImportTarget = factory()
        return target

    if isinstance(store, SQLiteStore):
        from sqlstore.sqlite.imports import SQLiteImports

        return SQLiteImports(store)
    if isinstance(store, MemoryStore):
        from sqlstore.migrate.memory_target import MemoryImports

        return MemoryImports(store)
    raise MigrationError(f"{type(store).__name__} does not support migration imports")
