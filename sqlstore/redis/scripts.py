"""The Lua scripts of the Redis backend: every multi-key write is one atomic script.

Redis runs a script to completion without interleaving other commands, so a
script is the backend's transaction: ``create`` checks and publishes in one
step, a delete removes snapshot, log, generation, audit rows and index entries
together, and an append touches the session's version in the same step.

Every script starts with a ``#!lua`` line (Redis 7.0 or later): Redis then
refuses a writing script *before* it starts when memory is above
``maxmemory`` (``StoreFull``), instead of failing it half-way. Scripts that
only read or delete say so in their flags, so they still run then.

Scripts build owner-index and session keys from the prefix (``ARGV``) instead
of declaring them all in ``KEYS``: this is why Redis Cluster is not supported.
Times arrive as decimal strings computed in Python (Lua numbers are doubles);
lease expiries are 20-digit strings so they compare correctly as text.
"""

from __future__ import annotations

# touch(skey, mtime, page_prefix, age_prefix, hexid, prefix, seq_key, page_key, age_key):
# record a write (event, audit) to a session that has a snapshot: new version,
# new modified time and the index members that encode it. Generation unchanged.
_TOUCH = """
local function touch(skey, mtime, pprefix, aprefix, hexid, prefix, seq_key, page_key, age_key)
  if redis.call('EXISTS', skey) == 0 then
    -- an id without a snapshot: an orphan, last written now
    redis.call('HSET', prefix .. 'orphans', string.sub(skey, #prefix + 9), mtime)
    return
  end
  local old = redis.call('HMGET', skey, 'idx_page', 'idx_age', 'owner_scope')
  local version = redis.call('INCR', seq_key)
  local pm = pprefix .. hexid
  local am = aprefix .. hexid
  if old[1] then redis.call('ZREM', page_key, old[1]) end
  if old[2] then redis.call('ZREM', age_key, old[2]) end
  redis.call('ZADD', page_key, 0, pm)
  redis.call('ZADD', age_key, 0, am)
  if old[3] and old[3] ~= '' then
    local okey = prefix .. 'index:' .. old[3]
    if old[1] then redis.call('ZREM', okey, old[1]) end
    redis.call('ZADD', okey, 0, pm)
  end
  redis.call('HSET', skey, 'mtime_ns', mtime, 'version', version, 'idx_page', pm, 'idx_age', am)
end
"""

PUT = """#!lua
-- KEYS: session, index:page, index:age, write-seq, inventory-gen
-- ARGV: must_be_new, blob, mtime_ns, meta, cmp, owner_scope, page_prefix, age_prefix,
--       hexid, prefix
-- Returns the new version, or 0 when must_be_new and a snapshot exists (nothing changed).
local skey = KEYS[1]
if ARGV[1] == '1' and redis.call('EXISTS', skey) == 1 then return 0 end
local old = redis.call('HMGET', skey, 'idx_page', 'idx_age', 'owner_scope')
if old[1] then redis.call('ZREM', KEYS[2], old[1]) end
if old[2] then redis.call('ZREM', KEYS[3], old[2]) end
if old[3] and old[3] ~= '' and old[1] then
  redis.call('ZREM', ARGV[10] .. 'index:' .. old[3], old[1])
end
local version = redis.call('INCR', KEYS[4])
local pm = ARGV[7] .. ARGV[9]
local am = ARGV[8] .. ARGV[9]
redis.call('HSET', skey, 'blob', ARGV[2], 'mtime_ns', ARGV[3], 'version', version,
  'meta', ARGV[4], 'cmp', ARGV[5], 'owner_scope', ARGV[6], 'idx_page', pm, 'idx_age', am)
redis.call('ZADD', KEYS[2], 0, pm)
redis.call('ZADD', KEYS[3], 0, am)
if ARGV[6] ~= '' then redis.call('ZADD', ARGV[10] .. 'index:' .. ARGV[6], 0, pm) end
redis.call('HDEL', ARGV[10] .. 'orphans', string.sub(skey, #ARGV[10] + 9))
redis.call('INCR', KEYS[5])
return version
"""

DELETE = """#!lua flags=allow-oom
-- Deleting frees memory, so it may run when Redis is at maxmemory (retention can still prune).
-- KEYS: session, events, events-gen, audit, index:page, index:age, inventory-gen, audit-ids,
--       lease
-- ARGV: prefix, session_id, conditional ('1' row / '2' orphan / '0'), version (row) or
--       last write in us (orphan), mtime_us, cmp, now20
-- Returns 1 when it deleted (or, unconditionally, always), 0 when the row (or the orphan's
-- last write) did not match or (conditional) a live lease protects the session.
local h = redis.call('HMGET', KEYS[1], 'idx_page', 'idx_age', 'owner_scope', 'version',
  'mtime_ns', 'cmp')
if ARGV[3] == '1' then
  if not h[4] or h[4] ~= ARGV[4] or string.sub(h[5], 1, -4) ~= ARGV[5] or h[6] ~= ARGV[6] then
    return 0
  end
elseif ARGV[3] == '2' then
  local last = redis.call('HGET', ARGV[1] .. 'orphans', ARGV[2])
  if h[4] or not last or string.sub(last, 1, -4) ~= ARGV[4] then return 0 end
end
if ARGV[3] ~= '0' then
  local lease = redis.call('HMGET', KEYS[9], 'owner', 'expires')
  if lease[1] and lease[1] ~= '' and lease[2] and lease[2] > ARGV[7] then return 0 end
end
-- UNLINK: a long stream or audit list is freed by a background thread, not in this script
redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4])
redis.call('SREM', KEYS[8], ARGV[2])
redis.call('HDEL', ARGV[1] .. 'orphans', ARGV[2])
-- A LangGraph thread's checkpoint data goes with its session (issue 17; key layout in
-- sqlstore.redis.checkpoint_scripts).
for _, k in ipairs(redis.call('SMEMBERS', ARGV[1] .. 'cp-wkeys:' .. ARGV[2])) do
  redis.call('DEL', k)
end
redis.call('DEL', ARGV[1] .. 'cp:' .. ARGV[2], ARGV[1] .. 'cp-index:' .. ARGV[2],
  ARGV[1] .. 'cp-blobs:' .. ARGV[2], ARGV[1] .. 'cp-wkeys:' .. ARGV[2])
redis.call('SREM', ARGV[1] .. 'cp-threads', ARGV[2])
if h[1] then
  redis.call('ZREM', KEYS[5], h[1])
  if h[3] and h[3] ~= '' then redis.call('ZREM', ARGV[1] .. 'index:' .. h[3], h[1]) end
end
if h[2] then redis.call('ZREM', KEYS[6], h[2]) end
if redis.call('DEL', KEYS[1]) == 1 then redis.call('INCR', KEYS[7]) end
return 1
"""

APPEND = (
    "#!lua\n"
    + _TOUCH
    + """
-- KEYS: events, events-gen, session, index:page, index:age, write-seq
-- ARGV: fresh_generation, kind ('e'/'g'), body, mtime_ns, page_prefix, age_prefix, hexid,
--       prefix
-- Returns {generation, position}. Entry ids are '<position>-0' (position = record count).
local gen = redis.call('GET', KEYS[2])
if not gen then
  gen = ARGV[1]
  redis.call('SET', KEYS[2], gen)
end
local pos = redis.call('XLEN', KEYS[1]) + 1
redis.call('XADD', KEYS[1], pos .. '-0', 'k', ARGV[2], 'b', ARGV[3])
touch(KEYS[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], KEYS[6], KEYS[4], KEYS[5])
return {gen, pos}
"""
)

AUDIT = (
    "#!lua\n"
    + _TOUCH
    + """
-- KEYS: audit, audit-ids, audit-seq, session, index:page, index:age, write-seq
-- ARGV: record JSON, session_id, mtime_ns, page_prefix, age_prefix, hexid, prefix
local seq = redis.call('INCR', KEYS[3])
redis.call('RPUSH', KEYS[1], seq .. ' ' .. ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
touch(KEYS[4], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], KEYS[7], KEYS[5], KEYS[6])
return seq
"""
)

RANGE = """#!lua flags=no-writes
-- KEYS: index (page, owner or age), inventory-gen
-- ARGV: expected_generation ('' = any), after_member ('' = from the start),
--       anchor_required ('1'/'0'), limit, prefix, time_hex_digits
-- Returns {'restart', why} or {generation, total, more, member1, meta1, mtime1, version1, ...}
local gen = redis.call('GET', KEYS[2]) or '0'
if ARGV[1] ~= '' and ARGV[1] ~= gen then return {'restart', 'generation'} end
local total = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[4])
local found
if ARGV[2] == '' then
  found = redis.call('ZRANGEBYLEX', KEYS[1], '-', '+', 'LIMIT', 0, limit + 1)
else
  if ARGV[3] == '1' and not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
    return {'restart', 'anchor'}
  end
  found = redis.call('ZRANGEBYLEX', KEYS[1], '(' .. ARGV[2], '+', 'LIMIT', 0, limit + 1)
end
local out = {gen, total, 0}
if #found > limit then out[3] = 1 end
local skip = tonumber(ARGV[6]) + 2
for i = 1, math.min(#found, limit) do
  local hexid = string.sub(found[i], skip)
  local id = (hexid:gsub('..', function(cc) return string.char(tonumber(cc, 16)) end))
  local f = redis.call('HMGET', ARGV[5] .. 'session:' .. id, 'meta', 'mtime_ns', 'version')
  out[#out + 1] = found[i]
  out[#out + 1] = f[1] or ''
  out[#out + 1] = f[2] or ''
  out[#out + 1] = f[3] or ''
end
return out
"""

LEASE_ACQUIRE = """#!lua
-- KEYS: lease, leases;  ARGV: owner, now20, expires20, session_id
-- Returns {1, token} or {0, holder, holder_expires20}.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires')
local holder, token, expires = cur[1], tonumber(cur[2]) or 0, cur[3]
local live = holder and holder ~= '' and expires and expires > ARGV[2]
if live and holder ~= ARGV[1] then return {0, holder, expires} end
if not live then token = token + 1 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'token', token, 'expires', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[4])
return {1, token}
"""

LEASE_RENEW = """#!lua
-- KEYS: lease;  ARGV: owner, token, now20, expires20.  Returns 1 if renewed, else 0.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires')
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] or not cur[3] or cur[3] <= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], 'expires', ARGV[4])
return 1
"""

LEASE_RELEASE = """#!lua flags=allow-oom
-- KEYS: lease;  ARGV: owner, token, zero20.  The token survives, so takeovers keep growing it.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token')
if cur[1] == ARGV[1] and cur[2] == ARGV[2] then
  redis.call('HSET', KEYS[1], 'owner', '', 'expires', ARGV[3])
end
return 1
"""

LOG_READ = """#!lua flags=no-writes
-- A read-only script instead of MULTI: Redis refuses every queued MULTI command at maxmemory,
-- while no-writes scripts still run, so followers keep reading a full server.
-- KEYS: events-gen, events;  ARGV: first_position ('' = head only), count
-- Returns {generation or false, length} or {generation or false, entries}.
local gen = redis.call('GET', KEYS[1])
if ARGV[1] == '' then return {gen, redis.call('XLEN', KEYS[2])} end
if not gen then return {gen, {}} end
return {gen, redis.call('XRANGE', KEYS[2], ARGV[1] .. '-0', '+', 'COUNT', ARGV[2])}
"""

IMPORT = """#!lua
-- One imported session and its checkpoint row, all or nothing (sqlstore migrate / copy_store).
-- KEYS: session, events, events-gen, audit, index:page, index:age, write-seq, inventory-gen,
--       audit-ids, audit-seq, job items
-- ARGV: 1 overwrite, 2 item, 3 row if imported, 4 row if exists, 5 prefix, 6 session_id,
--       7 blob, 8 mtime_ns, 9 meta, 10 cmp, 11 owner_scope, 12 page_prefix, 13 age_prefix,
--       14 hexid, 15 generation, 16 record count, 17 audit count, 18 spare generation,
--       then (kind, body) per record, then one '<json>' per audit row.
-- Returns 1 when imported, 0 when the id exists and overwrite is off (only the row written),
-- and, when overwrite is off, 2 when another run of this job imported this item with the
-- same fingerprint, 3 when it imported it with another one (2 and 3 write nothing).
-- "Exists" (the ImportTarget contract): a snapshot, an event log or audit rows.
local skey = KEYS[1]
local cur = redis.call('HGET', KEYS[11], ARGV[2])
if cur and ARGV[1] ~= '1' then
  local was, now = cjson.decode(cur), cjson.decode(ARGV[3])
  if was.outcome == 'imported' and was.session_id == ARGV[6] then
    if was.sha256 == now.sha256 and was.size == now.size and was.mtime_ns == now.mtime_ns then
      return 2
    end
    return 3
  end
end
if redis.call('EXISTS', skey, KEYS[2], KEYS[3], KEYS[4]) > 0 and ARGV[1] ~= '1' then
  redis.call('HSET', KEYS[11], ARGV[2], ARGV[4])
  return 0
end
local generation = ARGV[15]
if redis.call('GET', KEYS[3]) == generation then
  generation = ARGV[18]  -- a replaced log never keeps its generation
end
local old = redis.call('HMGET', skey, 'idx_page', 'idx_age', 'owner_scope')
if old[1] then
  redis.call('ZREM', KEYS[5], old[1])
  if old[3] and old[3] ~= '' then redis.call('ZREM', ARGV[5] .. 'index:' .. old[3], old[1]) end
end
if old[2] then redis.call('ZREM', KEYS[6], old[2]) end
redis.call('DEL', skey, KEYS[2], KEYS[3], KEYS[4])
redis.call('SREM', KEYS[9], ARGV[6])
local records = tonumber(ARGV[16])
local audits = tonumber(ARGV[17])
if records > 0 then redis.call('SET', KEYS[3], generation) end
local at = 19
for i = 1, records do
  redis.call('XADD', KEYS[2], i .. '-0', 'k', ARGV[at], 'b', ARGV[at + 1])
  at = at + 2
end
for i = 1, audits do
  local seq = redis.call('INCR', KEYS[10])
  redis.call('RPUSH', KEYS[4], seq .. ' ' .. ARGV[at])
  at = at + 1
end
if audits > 0 then redis.call('SADD', KEYS[9], ARGV[6]) end
local version = redis.call('INCR', KEYS[7])
local pm = ARGV[12] .. ARGV[14]
local am = ARGV[13] .. ARGV[14]
redis.call('HSET', skey, 'blob', ARGV[7], 'mtime_ns', ARGV[8], 'version', version,
  'meta', ARGV[9], 'cmp', ARGV[10], 'owner_scope', ARGV[11], 'idx_page', pm, 'idx_age', am)
redis.call('ZADD', KEYS[5], 0, pm)
redis.call('ZADD', KEYS[6], 0, am)
if ARGV[11] ~= '' then redis.call('ZADD', ARGV[5] .. 'index:' .. ARGV[11], 0, pm) end
redis.call('INCR', KEYS[8])
redis.call('HSET', KEYS[11], ARGV[2], ARGV[3])
return 1
"""

RETENTION_RUN = """#!lua
-- KEYS: retention-run-seq, retention-runs;  ARGV: record JSON (without id), kept
-- Returns the new record id. Keeps the newest `kept` records.
local id = redis.call('INCR', KEYS[1])
redis.call('LPUSH', KEYS[2], id .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
return id
"""

APPLY = (
    "#!lua\n"
    + _TOUCH
    + """
-- One unit of work on a session (store.apply, append_events, conditional save): a version
-- check, then events, audit rows and the snapshot, all or nothing.
-- KEYS: 1 session, 2 events, 3 events-gen, 4 audit, 5 audit-ids, 6 audit-seq, 7 index:page,
--       8 index:age, 9 write-seq, 10 inventory-gen
-- ARGV: 1 expected version ('' = unconditional, '0' = must not exist), 2 fresh generation,
--       3 mtime_ns, 4 page_prefix, 5 age_prefix, 6 hexid, 7 prefix, 8 session_id,
--       9 has snapshot ('1'/'0'), 10 blob, 11 meta, 12 cmp, 13 owner_scope,
--       14 event count, 15 audit count, then one body per event, then one JSON per audit row,
--       then the scoped-state count and, per key of a delta, its scope hash key, scope id,
--       state key and JSON value (merged with HSET, the scope id added to ARGV[7]..'scopes').
-- Returns {'conflict', stored version or ''} (nothing written) or
--         {'ok', version or 0, generation or '', first position or 0}.
local skey = KEYS[1]
local stored = redis.call('HGET', skey, 'version')
local expected = ARGV[1]
if expected ~= '' then
  if expected == '0' then
    if stored then return {'conflict', stored} end
  elseif stored ~= expected then
    return {'conflict', stored or ''}
  end
end
local nevents = tonumber(ARGV[14])
local naudit = tonumber(ARGV[15])
local gen, first = '', 0
local at = 16
if nevents > 0 then
  gen = redis.call('GET', KEYS[3])
  if not gen then
    gen = ARGV[2]
    redis.call('SET', KEYS[3], gen)
  end
  first = redis.call('XLEN', KEYS[2]) + 1
  for i = 0, nevents - 1 do
    redis.call('XADD', KEYS[2], (first + i) .. '-0', 'k', 'e', 'b', ARGV[at])
    at = at + 1
  end
end
for i = 1, naudit do
  local seq = redis.call('INCR', KEYS[6])
  redis.call('RPUSH', KEYS[4], seq .. ' ' .. ARGV[at])
  at = at + 1
end
if naudit > 0 then redis.call('SADD', KEYS[5], ARGV[8]) end
local nscoped = tonumber(ARGV[at] or '0')
at = at + 1
for i = 1, nscoped do
  redis.call('HSET', ARGV[at], ARGV[at + 2], ARGV[at + 3])
  redis.call('SADD', ARGV[7] .. 'scopes', ARGV[at + 1])
  at = at + 4
end
local version = stored or 0
if ARGV[9] == '1' then
  local old = redis.call('HMGET', skey, 'idx_page', 'idx_age', 'owner_scope')
  if old[1] then redis.call('ZREM', KEYS[7], old[1]) end
  if old[2] then redis.call('ZREM', KEYS[8], old[2]) end
  if old[3] and old[3] ~= '' and old[1] then
    redis.call('ZREM', ARGV[7] .. 'index:' .. old[3], old[1])
  end
  version = redis.call('INCR', KEYS[9])
  local pm = ARGV[4] .. ARGV[6]
  local am = ARGV[5] .. ARGV[6]
  redis.call('HSET', skey, 'blob', ARGV[10], 'mtime_ns', ARGV[3], 'version', version,
    'meta', ARGV[11], 'cmp', ARGV[12], 'owner_scope', ARGV[13], 'idx_page', pm, 'idx_age', am)
  redis.call('ZADD', KEYS[7], 0, pm)
  redis.call('ZADD', KEYS[8], 0, am)
  if ARGV[13] ~= '' then redis.call('ZADD', ARGV[7] .. 'index:' .. ARGV[13], 0, pm) end
  redis.call('HDEL', ARGV[7] .. 'orphans', ARGV[8])
  redis.call('INCR', KEYS[10])
elseif nevents > 0 or naudit > 0 then
  -- without a snapshot, touch records the id as an orphan
  touch(skey, ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], KEYS[9], KEYS[7], KEYS[8])
  if stored then version = redis.call('HGET', skey, 'version') end
end
return {'ok', version, gen, first}
"""
)

LOG_TAIL = """#!lua flags=no-writes
-- KEYS: events-gen, events;  ARGV: expected generation ('' = any), last position ('' = the
-- end), count.  Returns {generation or false, length, entries newest first}; entries are
-- empty when the generation is not the expected one.
local gen = redis.call('GET', KEYS[1])
local len = redis.call('XLEN', KEYS[2])
if not gen or (ARGV[1] ~= '' and gen ~= ARGV[1]) then return {gen, len, {}} end
local last = '+'
if ARGV[2] ~= '' then
  if tonumber(ARGV[2]) < 1 then return {gen, len, {}} end
  last = ARGV[2] .. '-0'
end
return {gen, len, redis.call('XREVRANGE', KEYS[2], last, '-', 'COUNT', ARGV[3])}
"""
