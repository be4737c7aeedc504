"""Key layout and value encodings of the Redis backend (see docs/redis.md).

Every key starts with the store's prefix (default ``sqlstore:``); a session id
is appended raw (Redis keys are binary-safe, so ids are never escaped or
hashed and cannot alias).

======================  ======  ==================================================
key                     type    content
======================  ======  ==================================================
``session:<id>``        HASH    ``blob`` (snapshot JSON), ``mtime_ns``, ``version``,
                                ``meta`` (inventory JSON), ``cmp`` (fields compared
                                by ``delete_if_unchanged``), ``owner_scope``,
                                ``idx_page`` / ``idx_age`` (its index members)
``events:<id>``         STREAM  one entry per record, entry id ``<pos>-0``,
                                fields ``k`` (``e`` event / ``g`` gap), ``b`` body
``events-gen:<id>``     STRING  the log generation (16 hex)
``audit:<id>``          LIST    ``<seq> <record JSON>`` per tool call
``audit-ids``           SET     ids that have audit records
``audit-seq``           STRING  counter: global record order of audit rows
``orphans``             HASH    id without a snapshot → last write (ns) of its log/audit
``index:page``          ZSET    all sessions, member ``page_member`` (scores 0)
``index:owner:<hash>``  ZSET    one owner's sessions, same members
``index:age``           ZSET    all sessions, member ``age_member`` (scores 0)
``inventory-gen``       STRING  counter bumped by save, create and delete
``write-seq``           STRING  counter: versions, never reused
``lease:<id>``          HASH    ``owner``, ``token``, ``expires`` (20-digit ns)
``leases``              SET     ids that have a lease hash
``migrate:<job>``       HASH    import checkpoint rows: item → row JSON
``migrate-jobs``        HASH    job id → job JSON (source, format, state, times)
``retention-runs``      LIST    ``<id> <record JSON>`` per retention sweep, newest first
``retention-run-seq``   STRING  counter: retention run ids
``cp:<id>`` ...         ...     graph checkpoints of a thread (six key kinds, see
                                ``sqlstore.redis.checkpoint_scripts``)
======================  ======  ==================================================

Index members: with all scores equal a ZSET orders members bytewise, so

* ``page_member`` = 16 hex of ``2**64-1 - mtime_ns`` + ``:`` + hex(id UTF-8):
  lexical order is modified_at DESC, then id ASC by bytes (as SQLite sorts);
* ``age_member`` = 16 hex of ``mtime_ns`` + ``:`` + hex(id UTF-8): oldest first.

Hex keeps byte order (two lowercase digits per byte, and a shorter id that is a
prefix of a longer one sorts first, as in a bytewise compare). All arithmetic
on nanoseconds happens in Python: Lua numbers are doubles and would round them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlstore import clock
from sqlstore.inventory import SessionMeta
from sqlstore.jsonl import canonical_json
from sqlstore.model import Kind, Principal, Relationship, State
from sqlstore.pager import scope_key
from sqlstore.session import Session

DEFAULT_PREFIX = "sqlstore:"
MEMBER_TIME_HEX = 16
"""Hex digits of the time part of an index member (then ``:``, then the hex id)."""

U64 = 2**64 - 1


@dataclass(frozen=True, slots=True)
class Keys:
    """Builds every key of one store (one prefix)."""

    prefix: str

    def session(self, session_id: str) -> str:
        return f"{self.prefix}session:{session_id}"

    def events(self, session_id: str) -> str:
        return f"{self.prefix}events:{session_id}"

    def generation(self, session_id: str) -> str:
        return f"{self.prefix}events-gen:{session_id}"

    def audit(self, session_id: str) -> str:
        return f"{self.prefix}audit:{session_id}"

    def cp(self, thread_id: str) -> str:
        return f"{self.prefix}cp:{thread_id}"

    def cp_index(self, thread_id: str) -> str:
        return f"{self.prefix}cp-index:{thread_id}"

    def cp_blobs(self, thread_id: str) -> str:
        return f"{self.prefix}cp-blobs:{thread_id}"

    def cp_writes_prefix(self, thread_id: str) -> str:
        """The start of a thread's write-hash keys (``+ <ns>\\0<checkpoint_id>``)."""
        return f"{self.prefix}cp-w:{thread_id}\x00"

    def cp_wkeys(self, thread_id: str) -> str:
        return f"{self.prefix}cp-wkeys:{thread_id}"

    @property
    def cp_threads(self) -> str:
        return f"{self.prefix}cp-threads"

    def lease(self, session_id: str) -> str:
        return f"{self.prefix}lease:{session_id}"

    def owner_index(self, scope: str) -> str:
        return f"{self.prefix}index:{scope}"

    def scope(self, scope: str) -> str:
        """The hash of one scope's state (field: key, value: JSON text; :mod:`sqlstore.scopes`)."""
        return f"{self.prefix}scope:{hex_id(scope)}"

    @property
    def scopes(self) -> str:
        """The set of scope ids that have state."""
        return f"{self.prefix}scopes"

    def job_items(self, job_id: str) -> str:
        return f"{self.prefix}migrate:{job_id}"

    @property
    def jobs(self) -> str:
        return f"{self.prefix}migrate-jobs"

    @property
    def retention_runs(self) -> str:
        return f"{self.prefix}retention-runs"

    @property
    def retention_run_seq(self) -> str:
        return f"{self.prefix}retention-run-seq"

    @property
    def orphans(self) -> str:
        return f"{self.prefix}orphans"

    @property
    def audit_ids(self) -> str:
        return f"{self.prefix}audit-ids"

    @property
    def audit_seq(self) -> str:
        return f"{self.prefix}audit-seq"

    @property
    def page_index(self) -> str:
        return f"{self.prefix}index:page"

    @property
    def age_index(self) -> str:
        return f"{self.prefix}index:age"

    @property
    def inventory_generation(self) -> str:
        return f"{self.prefix}inventory-gen"

    @property
    def write_seq(self) -> str:
        return f"{self.prefix}write-seq"

    @property
    def leases(self) -> str:
        return f"{self.prefix}leases"


def hex_id(session_id: str) -> str:
    """Return the lowercase hex of the id's UTF-8 bytes (order-preserving)."""
    return session_id.encode("utf-8").hex()


def page_prefix(mtime_ns: int) -> str:
    """Return the time part (with ``:``) of a ``page_member`` (newest sorts first)."""
    return f"{U64 - mtime_ns:016x}:"


def age_prefix(mtime_ns: int) -> str:
    """Return the time part (with ``:``) of an ``age_member`` (oldest sorts first)."""
    return f"{mtime_ns:016x}:"


def page_member(mtime_ns: int, session_id: str) -> str:
    """Return the ``index:page`` member of a session modified at ``mtime_ns``."""
    return page_prefix(mtime_ns) + hex_id(session_id)


def parse_age_member(member: bytes) -> tuple[int, str]:
    """Return (mtime_ns, id) of an ``index:age`` member."""
    text = member.decode("ascii")
    return int(text[:MEMBER_TIME_HEX], 16), bytes.fromhex(text[MEMBER_TIME_HEX + 1 :]).decode()


def owner_scope(session: Session) -> str:
    """Return the owner-index scope of a session, or ``""`` when it has no owner."""
    return "" if session.owner is None else scope_key(session.owner, True)


def meta_json(session: Session, blob: bytes) -> str:
    """Return the ``meta`` field: the inventory columns that change only on save."""
    return canonical_json(
        {
            "state": str(session.state),
            "kind": str(session.kind),
            "relationship": session.relationship.to_json(),
            "owner": None if session.owner is None else session.owner.to_json(),
            "created_at_ns": clock.to_ns(session.created_at),
            "title": session.title,
            "model_id": session.model_id,
            "turns": session.counters.turns,
            "estimated_bytes": len(blob),
        }
    )


def compared_json(
    state: str, kind: str, relationship: Relationship, owner: Principal | None
) -> str:
    """Return the ``cmp`` field: what ``delete_if_unchanged`` compares besides time and version."""
    return canonical_json(
        [state, kind, relationship.to_json(), None if owner is None else owner.to_json()]
    )


def session_compared(session: Session) -> str:
    """Return the ``cmp`` field of a session about to be saved."""
    return compared_json(str(session.state), str(session.kind), session.relationship, session.owner)


def meta_compared(meta: SessionMeta) -> str:
    """Return the ``cmp`` field an inventory row stands for."""
    return compared_json(str(meta.state), str(meta.kind), meta.relationship, meta.owner)


def build_meta(session_id: str, meta: bytes, mtime_ns: bytes, version: bytes) -> SessionMeta:
    """Build a ``SessionMeta`` from the hash fields ``meta``, ``mtime_ns`` and ``version``."""
    doc = json.loads(meta)
    owner = doc["owner"]
    return SessionMeta(
        id=session_id,
        modified_at=clock.from_ns(int(mtime_ns)),
        version=int(version),
        state=State(doc["state"]),
        kind=Kind(doc["kind"]),
        relationship=Relationship.from_json(doc["relationship"]),
        owner=None if owner is None else Principal.from_json(owner),
        created_at=clock.from_ns(int(doc["created_at_ns"])),
        title=str(doc["title"]),
        model_id=str(doc["model_id"]),
        turns=int(doc["turns"]),
        estimated_bytes=int(doc["estimated_bytes"]),
    )


def ns20(ns: int) -> str:
    """Return nanoseconds as 20 zero-padded digits, so Lua can compare them as strings."""
    return f"{ns:020d}"
