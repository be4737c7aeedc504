"""Lua scripts of the Redis checkpoint port: each write, and each page read, is one script.

Keys of a thread ``<t>`` (after the store's prefix; see docs/redis.md):

==========================  ======  ===============================================
``cp:<t>``                  HASH    ``<ns>\\0<checkpoint_id>`` → record JSON
``cp-index:<t>``            ZSET    ``<checkpoint_id>\\0<ns>`` (scores 0: lex order)
``cp-blobs:<t>``            HASH    ``<ns>\\0<channel>\\0<version>`` → ``<type>\\0<bytes>``
``cp-w:<t>\\0<ns>\\0<id>``  HASH    ``<task_id>\\0<idx>`` → write JSON
``cp-wkeys:<t>``            SET     the ``cp-w:`` keys of the thread
``cp-threads``              SET     thread ids with checkpoint data
==========================  ======  ===============================================

Names never contain NUL (checked in Python), so the NUL-joined fields split
unambiguously and index members sort as (checkpoint id, ns). Session writes
reuse the backend's ``touch``; a thread's first put publishes its session
snapshot the way ``sessions.save`` does.
"""

from __future__ import annotations

from sqlstore.redis.scripts import _TOUCH

# publish(skey, blob, mtime, meta, cmp, owner_scope, pprefix, aprefix, hexid, prefix,
#         seq_key, page_key, age_key, gen_key): store a new session snapshot and its index
# members, as sessions.save does for a session that has none.
_PUBLISH = """
local function publish(skey, blob, mtime, meta, cmp, oscope, pprefix, aprefix, hexid, prefix,
                       seq_key, page_key, age_key, gen_key)
  local version = redis.call('INCR', seq_key)
  local pm = pprefix .. hexid
  local am = aprefix .. hexid
  redis.call('HSET', skey, 'blob', blob, 'mtime_ns', mtime, 'version', version, 'meta', meta,
    'cmp', cmp, 'owner_scope', oscope, 'idx_page', pm, 'idx_age', am)
  redis.call('ZADD', page_key, 0, pm)
  redis.call('ZADD', age_key, 0, am)
  if oscope ~= '' then redis.call('ZADD', prefix .. 'index:' .. oscope, 0, pm) end
  redis.call('INCR', gen_key)
end
"""

# Blob garbage collection and whole-thread removal, shared by delete, prune and DELETE.
_GC = """
local function collect(cp, blobs)
  local kept = {}
  local recs = redis.call('HGETALL', cp)
  for i = 1, #recs, 2 do
    local ns = string.sub(recs[i], 1, string.find(recs[i], '\\0', 1, true) - 1)
    for ch, ver in pairs(cjson.decode(recs[i + 1])['v']) do
      kept[ns .. '\\0' .. ch .. '\\0' .. ver] = true
    end
  end
  local fields = redis.call('HKEYS', blobs)
  for _, f in ipairs(fields) do
    if not kept[f] then redis.call('HDEL', blobs, f) end
  end
end
"""

_SESSION_ARGS = """
local function ensure_session(skey, a, seq_key, page_key, age_key, gen_key)
  -- a: {mtime, pprefix, aprefix, hexid, prefix, create, blob, meta, cmp, owner_scope}
  if redis.call('EXISTS', skey) == 1 then
    touch(skey, a[1], a[2], a[3], a[4], a[5], seq_key, page_key, age_key)
  elseif a[6] == '1' then
    publish(skey, a[7], a[1], a[8], a[9], a[10], a[2], a[3], a[4], a[5], seq_key, page_key,
      age_key, gen_key)
  end
end
"""

PUT = (
    "#!lua\n"
    + _TOUCH
    + _PUBLISH
    + _SESSION_ARGS
    + """
-- KEYS: cp, cp-index, cp-blobs, cp-threads, session, index:page, index:age, write-seq,
--       inventory-gen
-- ARGV: 1-10 session args (see ensure_session), 11 thread, 12 field, 13 member, 14 record,
--       15 blob count, then (field, value) per blob
ensure_session(KEYS[5], ARGV, KEYS[8], KEYS[6], KEYS[7], KEYS[9])
redis.call('HSET', KEYS[1], ARGV[12], ARGV[14])
redis.call('ZADD', KEYS[2], 0, ARGV[13])
redis.call('SADD', KEYS[4], ARGV[11])
local at = 16
for i = 1, tonumber(ARGV[15]) do
  redis.call('HSET', KEYS[3], ARGV[at], ARGV[at + 1])
  at = at + 2
end
return 1
"""
)

WRITES = (
    "#!lua\n"
    + _TOUCH
    + """
-- KEYS: cp-w key, cp-wkeys, session, index:page, index:age, write-seq
-- ARGV: replace, mtime, pprefix, aprefix, hexid, prefix, count, then (field, value) pairs
local verb = 'HSETNX'
if ARGV[1] == '1' then verb = 'HSET' end
local at = 8
for i = 1, tonumber(ARGV[7]) do
  redis.call(verb, KEYS[1], ARGV[at], ARGV[at + 1])
  at = at + 2
end
redis.call('SADD', KEYS[2], KEYS[1])
touch(KEYS[3], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], KEYS[6], KEYS[4], KEYS[5])
return 1
"""
)

PAGE = """#!lua flags=no-writes
-- KEYS: cp-index, cp, cp-blobs
-- ARGV: max bound ('+', '(member' or '[member'), limit, writes-key prefix ('<p>cp-w:<t>\\0')
-- Returns one {member, record or false, {write field, value, ...}, {channel, blob, ...}}
-- per index member read, newest first.
local members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[1], '-', 'LIMIT', 0,
  tonumber(ARGV[2]))
local out = {}
for _, m in ipairs(members) do
  local sep = string.find(m, '\\0', 1, true)
  local ns = string.sub(m, sep + 1)
  local field = ns .. '\\0' .. string.sub(m, 1, sep - 1)
  local rec = redis.call('HGET', KEYS[2], field)
  local blobs = {}
  if rec then
    for ch, ver in pairs(cjson.decode(rec)['v']) do
      local b = redis.call('HGET', KEYS[3], ns .. '\\0' .. ch .. '\\0' .. ver)
      if b then
        blobs[#blobs + 1] = ch
        blobs[#blobs + 1] = b
      end
    end
  end
  out[#out + 1] = {m, rec or false, redis.call('HGETALL', ARGV[3] .. field), blobs}
end
return out
"""

REMOVE = (
    "#!lua flags=allow-oom\n"
    + _TOUCH
    + _GC
    + """
-- KEYS: cp, cp-index, cp-blobs, cp-wkeys, cp-threads, session, index:page, index:age,
--       write-seq
-- ARGV: thread, wprefix, mtime, pprefix, aprefix, hexid, prefix, mode ('some',
--       'keep_latest', 'all'), then for 'some' the members to delete
-- Returns the number of checkpoints removed.
local members = {}
if ARGV[8] == 'some' then
  for i = 9, #ARGV do
    if redis.call('ZSCORE', KEYS[2], ARGV[i]) then members[#members + 1] = ARGV[i] end
  end
else
  local seen = {}
  for _, m in ipairs(redis.call('ZREVRANGEBYLEX', KEYS[2], '+', '-')) do
    local ns = string.sub(m, string.find(m, '\\0', 1, true) + 1)
    if ARGV[8] == 'all' or seen[ns] then members[#members + 1] = m end
    seen[ns] = true
  end
end
for _, m in ipairs(members) do
  local sep = string.find(m, '\\0', 1, true)
  local field = string.sub(m, sep + 1) .. '\\0' .. string.sub(m, 1, sep - 1)
  redis.call('HDEL', KEYS[1], field)
  redis.call('ZREM', KEYS[2], m)
  redis.call('DEL', ARGV[2] .. field)
  redis.call('SREM', KEYS[4], ARGV[2] .. field)
end
if ARGV[8] == 'all' then
  for _, k in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('DEL', k) end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
else
  collect(KEYS[1], KEYS[3])
end
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('SREM', KEYS[5], ARGV[1]) end
if #members > 0 then
  touch(KEYS[6], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], KEYS[9], KEYS[7], KEYS[8])
end
return #members
"""
)

COPY = (
    "#!lua\n"
    + _TOUCH
    + _PUBLISH
    + _SESSION_ARGS
    + """
-- KEYS: src cp, src index, src blobs, src wkeys, dst cp, dst index, dst blobs, dst wkeys,
--       cp-threads, dst session, index:page, index:age, write-seq, inventory-gen
-- ARGV: 1-10 session args of the target, 11 target thread, 12 src wprefix, 13 dst wprefix
-- Returns the number of checkpoints copied (0: nothing, no session created).
local recs = redis.call('HGETALL', KEYS[1])
if #recs == 0 then return 0 end
for i = 1, #recs, 2 do redis.call('HSET', KEYS[5], recs[i], recs[i + 1]) end
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do redis.call('ZADD', KEYS[6], 0, m) end
local blobs = redis.call('HGETALL', KEYS[3])
for i = 1, #blobs, 2 do redis.call('HSET', KEYS[7], blobs[i], blobs[i + 1]) end
for _, k in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local dst = ARGV[13] .. string.sub(k, #ARGV[12] + 1)
  local ws = redis.call('HGETALL', k)
  for i = 1, #ws, 2 do redis.call('HSET', dst, ws[i], ws[i + 1]) end
  if #ws > 0 then redis.call('SADD', KEYS[8], dst) end
end
redis.call('SADD', KEYS[9], ARGV[11])
ensure_session(KEYS[10], ARGV, KEYS[13], KEYS[11], KEYS[12], KEYS[14])
return #recs / 2
"""
)

SUMMARY = """#!lua flags=no-writes
-- KEYS: cp, cp-blobs, cp-wkeys.  Returns {checkpoints, namespaces, blobs, writes, bytes}.
local bytes, nss, nns = 0, {}, 0
local recs = redis.call('HGETALL', KEYS[1])
for i = 1, #recs, 2 do
  local ns = string.sub(recs[i], 1, string.find(recs[i], '\\0', 1, true) - 1)
  if not nss[ns] then nss[ns] = true; nns = nns + 1 end
  bytes = bytes + #recs[i + 1]
end
local blobs = redis.call('HVALS', KEYS[2])
for _, b in ipairs(blobs) do bytes = bytes + #b end
local writes = 0
for _, k in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  for _, w in ipairs(redis.call('HVALS', k)) do
    writes = writes + 1
    bytes = bytes + #w
  end
end
return {#recs / 2, nns, #blobs, writes, bytes}
"""

IMPORT = """#!lua
-- Replace a thread's checkpoint data (copy between stores); the session is not touched.
-- KEYS: cp, cp-index, cp-blobs, cp-wkeys, cp-threads
-- ARGV: thread, wprefix, records, then (field, member, record) per record, blobs, then
--       (field, value) per blob, writes, then (checkpoint field, write field, value)
for _, k in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('DEL', k) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local at = 4
for i = 1, tonumber(ARGV[3]) do
  redis.call('HSET', KEYS[1], ARGV[at], ARGV[at + 2])
  redis.call('ZADD', KEYS[2], 0, ARGV[at + 1])
  at = at + 3
end
local blobs = tonumber(ARGV[at])
at = at + 1
for i = 1, blobs do
  redis.call('HSET', KEYS[3], ARGV[at], ARGV[at + 1])
  at = at + 2
end
local writes = tonumber(ARGV[at])
at = at + 1
for i = 1, writes do
  redis.call('HSET', ARGV[2] .. ARGV[at], ARGV[at + 1], ARGV[at + 2])
  redis.call('SADD', KEYS[4], ARGV[2] .. ARGV[at])
  at = at + 3
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SADD', KEYS[5], ARGV[1])
else
  redis.call('SREM', KEYS[5], ARGV[1])
end
return 1
"""
