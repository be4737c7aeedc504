"""SQLiteStore (being written)."""

from __future__ import annotations


class SQLiteStore:
    """Placeholder while the backend is written in this session."""

    def __init__(self, path: str, **options: object) -> None:
        raise NotImplementedError("SQLiteStore is being written")
