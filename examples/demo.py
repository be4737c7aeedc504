"""The main job: import the shipped sample data into ./sessions.db and list the sessions.

Run from anywhere (the database is created in the current directory)::

    python examples/demo.py

Running it again imports nothing new: the import jobs are resumable and
idempotent, so the second run reports every item as already imported.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a source checkout

import sqlstore
from sqlstore.migrate import run_migration

HERE = Path(__file__).resolve().parent
SOURCES = (HERE / "runlogs", HERE / "mecatl-store")
TITLE_MAX_CHARS = 40


def main() -> int:
    """Migrate both example sources and print a listing; return the exit status."""
    status = 0
    with sqlstore.open("sessions.db") as store:
        for source in SOURCES:
            report = run_migration(store, source)
            skipped = ", ".join(f"{k} {v}" for k, v in sorted(report.skipped.items()))
            print(
                f"{source.name}: imported {report.imported}, skipped {sum(report.skipped.values())}"
                + (f" ({skipped})" if skipped else "")
                + f", failed {report.failed}, warnings {len(report.warnings)}"
            )
            status |= 0 if report.ok else 1
        print()
        rows = [("ID", "KIND", "STATE", "TITLE", "EVENTS", "AUDIT")]
        for meta in sorted(store.sessions.iter_meta(), key=lambda m: m.id):
            title = meta.title if len(meta.title) <= TITLE_MAX_CHARS else meta.title[:39] + "…"
            events = sum(1 for _ in store.events.read_after(meta.id))
            audit = len(store.audit.list(meta.id))
            rows.append((meta.id, meta.kind, meta.state, title, str(events), str(audit)))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            print("  ".join(cells).rstrip())
    return status


if __name__ == "__main__":
    raise SystemExit(main())
