"""Every Lua script of the state layer (format version ``keys.FORMAT_VERSION``).

``SCRIPTS`` are run by name through ``connection.run_scripts`` (one pipelined
round of EVALSHA). The scripts on the namespace's own slot (dead letters,
redrive, the sink stream, batch counters) are in ``lua_ns.py``, the duplicate checks in
``lua_dedup.py``, the fence check every write script starts with in ``lua_fence.py``.

Each write script first runs the fence check (stale epoch, txid at or below
the committed one) and validates every key before it writes anything, so a
rejected call leaves no partial write. A script only touches keys of one key
group (one hash slot), which keeps it valid on Redis Cluster. Scripts must run
on Redis's Lua 5.1 and on fakeredis's Lua 5.4 (no cmsgpack, no struct).
"""

from __future__ import annotations

from stormshift.state.lua_dedup import DEDUP_SCRIPTS
from stormshift.state.lua_fence import FENCE as _FENCE
from stormshift.state.lua_lease import LEASE_SCRIPTS
from stormshift.state.lua_ns import DLQ_ADD_FENCED, SINK_PUT, STATS_PUT
from stormshift.state.lua_target import TARGET_SCRIPTS

# Server-side numeric add on encoded values ('i<int>' / 'f<float>'; '' = absent = 0).
# Integers below 1e14 print exactly with '..' (Lua's %.14g); larger ones via %d.
_ADD = r"""
local sub, find, byte, fmt = string.sub, string.find, string.byte, string.format
local LIM = 9007199254740992
local operands = {}
local function add(a, b)
  local ta, x
  if a == '' then ta = 105; x = 0 else ta = byte(a, 1); x = tonumber(sub(a, 2)) end
  local tb, y = 105, operands[b]
  if y == nil then tb = byte(b, 1); y = tonumber(sub(b, 2)); if tb == 105 then operands[b] = y end end
  if x == nil or y == nil or (ta ~= 105 and ta ~= 102) or (tb ~= 105 and tb ~= 102) then
    return nil, 'NOTNUM cannot increment a non-numeric value'
  end
  local s = x + y
  if ta == 105 and tb == 105 then
    if s < 1e14 and s > -1e14 then return 'i' .. s end
    if s >= LIM or s <= -LIM or x >= LIM or x <= -LIM then
      return nil, 'OVERFLOW integer increment beyond 2^53'
    end
    return 'i' .. fmt('%d', s)
  end
  return 'f' .. fmt('%.17g', s)
end
"""

# KEYS: fence, map. ARGV: epoch, txid, who, op, then (field, operand)*. op 's' set | 'i' incr.
# Record: "<txid>|<value>"; a stored txid equal to ours means already applied: skip.
TRANSACTIONAL_WRITE = _FENCE + _ADD + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local txid = ARGV[2]
local txn = tonumber(txid)
local op = ARGV[4]
local n = (#ARGV - 4) / 2
local fields = {}
for j = 1, n do fields[j] = ARGV[2 * j + 3] end
local recs = redis.call('HMGET', KEYS[2], unpack(fields))
local out = {}
for j = 1, n do
  local rec = recs[j]
  local v = ARGV[2 * j + 4]
  local cur = ''
  local skip = false
  if rec then
    local a = find(rec, '|', 1, true)
    local t = tonumber(sub(rec, 1, a - 1))
    if t > txn then return redis.error_reply('FENCED key already holds newer txid ' .. t) end
    if t == txn then skip = true else cur = sub(rec, a + 1) end
  end
  if not skip then
    local new, e = v, nil
    if op == 'i' then new, e = add(cur, v) end
    if not new then return redis.error_reply(e) end
    out[#out + 1] = fields[j]
    out[#out + 1] = txid .. '|' .. new
  end
end
if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
return #out / 2
"""

# Record: "<txid>|<len(prev)>|<prev><curr>"; prev '' = absent.
# Stored txid equal to ours: recompute from prev; else curr becomes prev.
OPAQUE_WRITE = _FENCE + _ADD + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local match = string.match
local txid = ARGV[2]
local ntx = #txid
local op = ARGV[4]
local n = (#ARGV - 4) / 2
local fields = {}
for j = 1, n do fields[j] = ARGV[2 * j + 3] end
local recs = redis.call('HMGET', KEYS[2], unpack(fields))
local out = {}
local o = 0
for j = 1, n do
  local rec = recs[j]
  local base = ''
  if rec then
    local t, lp = match(rec, '^(%d+)|(%d+)|')
    local h = #t + #lp + 3
    lp = tonumber(lp)
    if t == txid then
      base = sub(rec, h, h + lp - 1)
    else
      if #t > ntx or (#t == ntx and t > txid) then
        return redis.error_reply('FENCED key already holds newer txid ' .. t)
      end
      base = sub(rec, h + lp)
    end
  end
  local new, e = ARGV[2 * j + 4], nil
  if op == 'i' then new, e = add(base, new) end
  if not new then return redis.error_reply(e) end
  out[o + 1] = fields[j]
  out[o + 2] = txid .. '|' .. #base .. '|' .. base .. new
  o = o + 2
end
if o > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
return o / 2
"""

# Plain (non-transactional) map: fenced, but values carry no txid; increments add.
PLAIN_WRITE = _FENCE + _ADD + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local op = ARGV[4]
local n = (#ARGV - 4) / 2
local fields = {}
for j = 1, n do fields[j] = ARGV[2 * j + 3] end
local recs = redis.call('HMGET', KEYS[2], unpack(fields))
local out = {}
for j = 1, n do
  local v = ARGV[2 * j + 4]
  local new, e = v, nil
  if op == 'i' then new, e = add(recs[j] or '', v) end
  if not new then return redis.error_reply(e) end
  out[#out + 1] = fields[j]
  out[#out + 1] = new
end
if #out > 0 then redis.call('HSET', KEYS[2], unpack(out)) end
return #out / 2
"""

# KEYS: fence. ARGV: who, epoch. Raises the group's copy of a task's epoch (never lowers).
FENCE_EPOCH = r"""
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if tonumber(ARGV[2]) > cur then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 1
"""

# KEYS: fence. ARGV: txid. Raises the group's copy of the committed txid.
FENCE_COMMITTED = r"""
local cur = tonumber(redis.call('HGET', KEYS[1], '__committed') or '-1')
if tonumber(ARGV[1]) > cur then redis.call('HSET', KEYS[1], '__committed', ARGV[1]) end
return 1
"""

# KEYS: commit. ARGV: txid, format. Txids never go backwards; same txid is a no-op.
RECORD_COMMIT = r"""
local cur = tonumber(redis.call('HGET', KEYS[1], 'committed') or '-1')
local t = tonumber(ARGV[1])
if t < cur then
  return redis.error_reply('FENCED commit of txid ' .. ARGV[1] .. ' below committed ' .. cur)
end
redis.call('HSET', KEYS[1], 'committed', ARGV[1], 'format', ARGV[2])
return cur
"""

# KEYS: fence, snapshot hash. ARGV: epoch, txid, who, field, payload. Version fields
# (``snapshots.py``): 'b:<txid>' base, 'd:<txid>:<prev>' delta on prev, '<txid>' a format-1
# base. Writes the version of txid (replacing any other of the same txid), then keeps the
# chain of the newest committed version and of every in-flight one (txid > committed).
SNAPSHOT_PUT = _FENCE + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local match = string.match
local function parse(f)
  local t = match(f, '^(%d+)$') or match(f, '^b:(%d+)$')
  if t then return tonumber(t), -1 end
  local d, p = match(f, '^d:(%d+):(%d+)$')
  if d then return tonumber(d), tonumber(p) end
  return nil, nil
end
local txid = tonumber(ARGV[2])
local name, prev = {}, {}
for _, f in ipairs(redis.call('HKEYS', KEYS[2])) do
  local t, p = parse(f)
  if t == txid and f ~= ARGV[4] then
    redis.call('HDEL', KEYS[2], f)
  elseif t then
    name[t] = f; prev[t] = p
  end
end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
name[txid] = ARGV[4]
local _, p = parse(ARGV[4])
prev[txid] = p
local committed = tonumber(redis.call('HGET', KEYS[1], '__committed') or '-1')
local keep = {}
local function mark(t)
  while t and t >= 0 and name[t] and not keep[t] do keep[t] = true; t = prev[t] end
end
local head = -1
for t, _ in pairs(name) do
  if t <= committed and t > head then head = t end
  if t > committed then mark(t) end
end
mark(head)
local dropped = 0
for t, f in pairs(name) do
  if not keep[t] then redis.call('HDEL', KEYS[2], f); dropped = dropped + 1 end
end
return dropped
"""

# KEYS: fence, target. ARGV: epoch, txid, who, command, args...
# Fenced generic write for task-owned keys (WAL appends and trims, sinks).
FENCED_COMMANDS = ("XADD", "XTRIM", "XDEL", "SET", "DEL", "HSET", "HDEL", "RPUSH", "LTRIM", "PEXPIRE")
FENCED_CALL = _FENCE + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local args = {}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
return redis.call(ARGV[4], KEYS[2], unpack(args))
"""

# KEYS: fence, wal stream, seen-id hashes. ARGV: epoch, txid, who, chunk id, payload, then per
# seen key: op ('hset' | 'del'), n, then n (field, value) pairs for 'hset'.
# One script, so a chunk and the msg ids it logs land together or not at all: a crash
# between them would either re-log a replayed tuple or drop a tuple as a replay.
WAL_APPEND = _FENCE + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
redis.call('XADD', KEYS[2], ARGV[4], 'c', ARGV[5])
local i = 6
for k = 3, #KEYS do
  local op, n = ARGV[i], tonumber(ARGV[i + 1])
  i = i + 2
  if op == 'del' then
    redis.call('DEL', KEYS[k])
  else
    local last = i + 2 * n - 1
    while i <= last do
      local stop = math.min(i + 1999, last)
      redis.call('HSET', KEYS[k], unpack(ARGV, i, stop))
      i = stop + 1
    end
  end
end
return 1
"""

# KEYS: fence, chunk heads hash, chunk data hash. ARGV: epoch, txid, who, chunk number,
# header, payload. One chunk per number: a second writer finds it and writes nothing (0).
CHUNK_PUT = _FENCE + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
if redis.call('HEXISTS', KEYS[2], ARGV[4]) == 1 then return 0 end
redis.call('HSET', KEYS[2], ARGV[4], ARGV[5])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[6])
return 1
"""


# A live instance catching up (``SnapshotStore.load_since``): KEYS[1] a task's snapshot
# hash, ARGV[1] the version it holds, ARGV[2] the head (magic + HMAC) it wrote there,
# ARGV[3..] the later versions. Nil unless the stored version begins with that head;
# else {1, blob...} (a blob pruned meanwhile comes back false). A read: no fence.
SNAPSHOT_SINCE = r"""
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held or string.sub(held, 1, #ARGV[2]) ~= ARGV[2] then return nil end
local out = {1}
for i = 3, #ARGV do out[#out + 1] = redis.call('HGET', KEYS[1], ARGV[i]) end
return out
"""

SCRIPTS: dict[str, str] = {
    "transactional": TRANSACTIONAL_WRITE,
    "opaque": OPAQUE_WRITE,
    "plain": PLAIN_WRITE,
    "fence_epoch": FENCE_EPOCH,
    "fence_committed": FENCE_COMMITTED,
    "record_commit": RECORD_COMMIT,
    "snapshot_put": SNAPSHOT_PUT,
    "snapshot_since": SNAPSHOT_SINCE,
    "fenced_call": FENCED_CALL,
    "wal_append": WAL_APPEND,
    "chunk_put": CHUNK_PUT,
    "dlq_add_fenced": DLQ_ADD_FENCED,
    "sink_put": SINK_PUT,
    "stats_put": STATS_PUT,
    **DEDUP_SCRIPTS,  # the exact and Bloom duplicate checks (lua_dedup.py)
    **LEASE_SCRIPTS,  # a run's lease of its namespace (lua_lease.py)
    **TARGET_SCRIPTS,  # the legacy's targets a cut-over port writes (lua_target.py)
}
