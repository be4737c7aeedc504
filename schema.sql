-- sqlstore schema, version 3. The single source of truth for tables and indexes.
-- Applied by sqlstore.sqlite.schema inside one BEGIN IMMEDIATE transaction, after the
-- file-level pragmas (journal_mode=WAL, auto_vacuum=INCREMENTAL) are set, and stamped
-- with PRAGMA application_id / user_version. Times are integer nanoseconds since the
-- Unix epoch (UTC), read from the clock by Python at call time, never by SQL.

-- One inventory row per session: what listing, paging and retention read. The
-- snapshot itself lives in `snapshots`, so the frequent inventory updates (every event
-- append and audit record moves modified_at and version) never rewrite a large blob.
CREATE TABLE sessions (
    id              TEXT PRIMARY KEY NOT NULL,
    state           TEXT NOT NULL,
    kind            TEXT NOT NULL,
    relationship    TEXT NOT NULL,          -- canonical JSON of Relationship
    owner           TEXT,                   -- canonical JSON of Principal, or NULL
    owner_key       TEXT,                   -- (issuer, subject) identity, or NULL
    created_at_ns   INTEGER NOT NULL,
    title           TEXT NOT NULL,
    model_id        TEXT NOT NULL,
    turns           INTEGER NOT NULL,
    estimated_bytes INTEGER NOT NULL,
    modified_at_ns  INTEGER NOT NULL,
    version         INTEGER NOT NULL
);
CREATE INDEX sessions_by_modified ON sessions (modified_at_ns, id);
-- Partial: only owned sessions are paged by owner, and an ownerless session's appends
-- then rewrite one index less (schema version 2).
CREATE INDEX sessions_by_owner ON sessions (owner_key, modified_at_ns, id)
    WHERE owner_key IS NOT NULL;

-- The snapshot (versioned JSON, see sqlstore.snapshot) of each row of `sessions`;
-- written and deleted in the same transactions as its inventory row.
CREATE TABLE snapshots (
    id   TEXT PRIMARY KEY NOT NULL,
    body BLOB NOT NULL
);

-- One row per existing event log. The generation is minted when the log is created
-- and the row is deleted with the session, so a recreated log has a new generation.
CREATE TABLE event_logs (
    session_id     TEXT PRIMARY KEY NOT NULL,
    generation     TEXT NOT NULL,
    length         INTEGER NOT NULL,
    modified_at_ns INTEGER NOT NULL
);

-- The records of every log; pos is the 1-based record number within its generation.
CREATE TABLE events (
    session_id TEXT NOT NULL,
    pos        INTEGER NOT NULL,
    is_gap     INTEGER NOT NULL,
    type       TEXT NOT NULL,               -- event type, '' for a gap
    at_ns      INTEGER NOT NULL,
    body       BLOB NOT NULL,               -- event JSON, or the gap reason (UTF-8)
    PRIMARY KEY (session_id, pos)
);

-- Tool-call audit trail; seq keeps record order and is never reused.
CREATE TABLE tool_calls (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    tool       TEXT NOT NULL,
    args       TEXT NOT NULL,
    result     TEXT NOT NULL,
    is_error   INTEGER NOT NULL,
    at_ns      INTEGER NOT NULL,
    queued_us  INTEGER NOT NULL,
    took_us    INTEGER NOT NULL,
    run_id     TEXT NOT NULL
);
CREATE INDEX tool_calls_by_session ON tool_calls (session_id, seq);
CREATE INDEX tool_calls_by_tool ON tool_calls (tool, seq);
CREATE INDEX tool_calls_by_time ON tool_calls (at_ns);

-- Leases on session ids (and on internal names such as the retention daemon's).
-- last_token survives release so a fencing token never goes backwards.
CREATE TABLE leases (
    name          TEXT PRIMARY KEY NOT NULL,
    owner         TEXT,
    token         INTEGER NOT NULL,
    expires_at_ns INTEGER NOT NULL
);

-- Small counters: inventory_generation (bumped by save, create and delete) and
-- write_seq, which keeps sessions.version from ever repeating for an id: a snapshot
-- write takes max(row version, write_seq) + 1 and stores it here, an event append or
-- audit record adds 1 to the row's version, and a delete raises write_seq to the
-- deleted row's version, so a re-created session starts above every old version.
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY NOT NULL,
    value INTEGER NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('inventory_generation', 0), ('write_seq', 0);

-- Resumable imports: one row per job, one per source item with its fingerprint.
CREATE TABLE migrations (
    job_id        TEXT PRIMARY KEY NOT NULL,
    source        TEXT NOT NULL,
    format        TEXT NOT NULL,
    started_at_ns INTEGER NOT NULL,
    updated_at_ns INTEGER NOT NULL,
    state         TEXT NOT NULL
);
CREATE TABLE migration_items (
    job_id      TEXT NOT NULL REFERENCES migrations (job_id) ON DELETE CASCADE,
    item        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    session_id  TEXT,
    detail      TEXT NOT NULL DEFAULT '',
    at_ns       INTEGER NOT NULL,
    PRIMARY KEY (job_id, item)
);

-- One row per retention sweep.
CREATE TABLE retention_runs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at_ns INTEGER NOT NULL,
    ended_at_ns   INTEGER NOT NULL,
    policy_hash   TEXT NOT NULL,
    planned       INTEGER NOT NULL,
    deleted       INTEGER NOT NULL,
    changed       INTEGER NOT NULL,
    failed        INTEGER NOT NULL,
    dry_run       INTEGER NOT NULL DEFAULT 0,
    detail        TEXT NOT NULL DEFAULT ''
);

-- Viewer (issue 19, schema version 3): `sqlstore ui` counts sessions by state and kind
-- and filters by state through this index instead of scanning every inventory row, and
-- finds the children of a session by their parent id. Event appends and audit records
-- only move modified_at_ns and version, so neither index is rewritten by them.
CREATE INDEX sessions_by_state_kind ON sessions (state, kind);
CREATE INDEX sessions_by_parent ON sessions (json_extract(relationship, '$.parent_session_id'))
    WHERE kind IN ('subagent', 'parallel_branch', 'team_member');
-- Scoped state (schema 3, #18: the ADK integration's app: and user: state): JSON values
-- by key per scope, shared beyond sessions, so deleting or pruning a session keeps them.
CREATE TABLE scoped_state (
    scope          TEXT NOT NULL,
    key            TEXT NOT NULL,
    value          TEXT NOT NULL,
    modified_at_ns INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;

-- LangGraph checkpointer (issue 17, schema version 3): graph checkpoints of a thread,
-- which is a session (session_id). A checkpoint row holds everything but the channel
-- values; `versions` (JSON object channel -> version) names the blobs it reads.
-- Blobs are keyed by channel and version, so an unchanged channel is stored once.
-- Deleted with the session: in the first step of a stepped deletion
-- (sqlstore.sqlite.deletion.start), else with its other rows (rows.delete_session_rows).
CREATE TABLE checkpoints (
    session_id    TEXT NOT NULL,
    ns            TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    run_id        TEXT,                    -- metadata run_id (delete_for_runs), or NULL
    type          TEXT NOT NULL,
    body          BLOB NOT NULL,
    metadata      BLOB NOT NULL,           -- JSON object
    versions      TEXT NOT NULL,           -- JSON object: channel -> version
    -- A rowid table (its key is an index): a checkpoint row is hundreds of bytes to
    -- kilobytes, more than a WITHOUT ROWID row keeps in its page (488 bytes at 2 KiB
    -- pages), which gave every put an overflow page, and appends at the end of a rowid
    -- table split no sibling pages. Files made by pre-release builds with a WITHOUT
    -- ROWID table work the same way, with more pages per put.
    PRIMARY KEY (session_id, ns, checkpoint_id)
);
CREATE TABLE checkpoint_blobs (
    session_id TEXT NOT NULL,
    ns         TEXT NOT NULL,
    channel    TEXT NOT NULL,
    version    TEXT NOT NULL,
    type       TEXT NOT NULL,              -- 'empty': a version without a value
    data       BLOB NOT NULL,
    -- Version before channel: LangGraph gives every channel a step writes the same
    -- new version, so a put's blobs land in one leaf page instead of one page per
    -- channel (fewer WAL pages per commit). Files made with the earlier key order
    -- (channel, version) work the same way, only with more pages per put.
    PRIMARY KEY (session_id, ns, version, channel)
) WITHOUT ROWID;
CREATE TABLE checkpoint_writes (
    session_id    TEXT NOT NULL,
    ns            TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    data          BLOB NOT NULL,
    task_path     TEXT NOT NULL,
    PRIMARY KEY (session_id, ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;

-- Orphan writes (issue 20 item 7, schema version 3): the ids that hold an event log or
-- audit rows but no snapshot (an append after `rm` or a prune, a recorder event before
-- the first save), with the time of their last write. Kept by the write paths (an append
-- or audit record to an id without a snapshot upserts it, a snapshot save or a delete
-- removes it), so listing, removing and pruning them never scans the events.
CREATE TABLE orphans (
    session_id     TEXT PRIMARY KEY NOT NULL,
    modified_at_ns INTEGER NOT NULL
);

-- Deletions in bounded steps (issue 20 item 16, schema version 3): a session whose
-- snapshot, inventory row and log head are already gone (so no reader sees it) while its
-- event and audit rows are deleted a bounded number per transaction. A row here hides
-- the id's remaining audit rows from readers; any write that would create data under the
-- id finishes the deletion first, and opening the store finishes one a crash interrupted.
CREATE TABLE deletions (
    session_id    TEXT PRIMARY KEY NOT NULL,
    started_at_ns INTEGER NOT NULL
);
