"""Build hook: an editable install maps only ``schema.sql``, not the renamed packages.

The wheel ships ``retention/`` and ``cli/`` as ``sqlstore/retention`` and
``sqlstore/cli`` (``force-include`` in pyproject.toml). An editable install
would copy them into site-packages as stale files; in a checkout the aliases
``sqlstore/retention`` and ``sqlstore/cli`` serve those names instead.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class EditableForceInclude(BuildHookInterface):  # type: ignore[misc]  # hatchling is untyped
    """Restrict the editable wheel's forced files to the schema."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Set the editable build's forced inclusions."""
        if version == "editable":
            build_data["force_include_editable"] = {"schema.sql": "sqlstore/schema.sql"}
