"""The SQLite backend: one WAL-mode file through apsw."""

from sqlstore.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
