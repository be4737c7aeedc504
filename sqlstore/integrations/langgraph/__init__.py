"""LangGraph checkpointer on sqlstore: ``SqlstoreSaver`` (extra ``langgraph``).

A LangGraph thread is a sqlstore session: listed by ``sqlstore ls``, shown by
``sqlstore show``, leased, pruned, backed up and exported like any other, and
deleting the session removes every checkpoint of the thread. See
``docs/integrations/langgraph.md``.
"""

from __future__ import annotations

try:
    import langgraph.checkpoint.base  # noqa: F401  (fail early without the extra)
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError(
        "sqlstore.integrations.langgraph needs LangGraph: pip install 'sqlstore[langgraph]'"
    ) from exc

from sqlstore.integrations.langgraph.config import InvalidConfig
from sqlstore.integrations.langgraph.saver import SqlstoreSaver
from sqlstore.integrations.langgraph.serde import CorruptValue, JsonSerializer, UnsupportedValue

__all__ = ["CorruptValue", "InvalidConfig", "JsonSerializer", "SqlstoreSaver", "UnsupportedValue"]
