"""Where an import writes: the store's import target (``store.imports``).

Every backend implements :class:`~sqlstore.ports.ImportTarget` in its own
package (``sqlite/imports.py``, ``memory/imports.py``, ``redis/imports.py``);
this module only finds it on the store. The batch types live in
:mod:`sqlstore.imports` and are re-exported here.
"""

from __future__ import annotations

from sqlstore.errors import MigrationError
from sqlstore.imports import BatchEntry, ItemRow
from sqlstore.ports import ImportTarget, imports_of

__all__ = ["BatchEntry", "ImportTarget", "ItemRow", "target_for"]


def target_for(store: object) -> ImportTarget:
    """Return the import target of a store (``store.imports``).

    A backend outside this package plugs in by giving its store an ``imports``
    attribute (or, as before, an ``import_target()`` method) that is an
    :class:`ImportTarget`.

    Raises:
        MigrationError: the backend does not support imports.
    """
    target = imports_of(store)
    if target is None:
        raise MigrationError(f"{type(store).__name__} does not support migration imports")
    return target
