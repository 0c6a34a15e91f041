"""The Lua scripts on a namespace's own slot ``{ns}`` (the rest: ``lua.py``).

Dead letters, the redrive queue, a ``redis:`` sink's marker and the batch
counters live beside the namespace's records (``keys.py``), not in a key
group. A task attempt's writes to them (``*_FENCED``, ``SINK_PUT``,
``STATS_PUT``) check the namespace-wide records instead of a group's fence
copy: the epoch counter, which ``acquire_epoch`` raises before it copies the
epoch to any group, and the commit record, which the driver writes before it
copies ``committed`` to the groups. Same rules as ``lua.py``: checks before
writes, Redis's Lua 5.1 and fakeredis's Lua 5.4.
"""

from __future__ import annotations

# The fence check of a task attempt's write to a namespace-wide key (module doc).
_NS_FENCE = r"""
local unpack = unpack or table.unpack
local function ns_fence(ekey, ckey, who, epoch_s, txid_s)
  local cur_s = redis.call('HGET', ekey, who) or '-1'
  if tonumber(epoch_s) < tonumber(cur_s) then
    return 'FENCED stale epoch ' .. epoch_s .. ' for task ' .. who .. ' (current epoch ' .. cur_s .. ')'
  end
  local com_s = redis.call('HGET', ckey, 'committed') or '-1'
  if tonumber(txid_s) <= tonumber(com_s) then
    return 'FENCED txid ' .. txid_s .. ' is at or below the committed txid ' .. com_s
  end
  return nil
end
"""

# One dead letter: dlq stream, its digest -> entry id hash, the txid's index hash (or nil).
# Idempotent: a replayed batch dead-letters the same tuple once. An index entry whose stream
# entry is gone (replayed and removed, moved to redrive, trimmed) does not count: the tuple
# failed again, so it is dead-lettered again rather than lost.
_DLQ_ADD = r"""
local unpack = unpack or table.unpack
local function dlq_add(dlq, ids, txk, digest, first)
  local have = redis.call('HGET', ids, digest)
  if have and #redis.call('XRANGE', dlq, have, have) == 1 then return have end
  local f = {}
  for i = first, #ARGV do f[#f + 1] = ARGV[i] end
  local id = redis.call('XADD', dlq, '*', unpack(f))
  redis.call('HSET', ids, digest, id)
  if txk then
    redis.call('HSET', txk, id, digest)
    redis.call('EXPIRE', txk, 604800)
  end
  return id
end
"""

# KEYS: dlq stream, dlq ids hash, [txid index hash]. ARGV: digest, field/value pairs.
DLQ_ADD = _DLQ_ADD + r"""
return dlq_add(KEYS[1], KEYS[2], KEYS[3], ARGV[1], 2)
"""

# KEYS: dlq stream, dlq ids hash, txid index hash. Deletes the txid's entries.
DLQ_DISCARD = r"""
local kv = redis.call('HGETALL', KEYS[3])
for i = 1, #kv, 2 do
  redis.call('XDEL', KEYS[1], kv[i])
  redis.call('HDEL', KEYS[2], kv[i + 1])
end
redis.call('DEL', KEYS[3])
return #kv / 2
"""

# KEYS: dlq stream, redrive stream. ARGV: dead-letter entry ids. Returns the ids moved.
REDRIVE_MOVE = r"""
local unpack = unpack or table.unpack
local moved = {}
for i = 1, #ARGV do
  local e = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
  if #e == 1 then
    local f = e[1][2]
    f[#f + 1] = 'dlq_id'
    f[#f + 1] = ARGV[i]
    redis.call('XADD', KEYS[2], '*', unpack(f))
    redis.call('XDEL', KEYS[1], ARGV[i])
    moved[#moved + 1] = ARGV[i]
  end
end
return moved
"""

# KEYS: redrive stream, claims hash, claim stream of this txid. ARGV: txid, max entries.
# Returns how many entries the txid holds (recorded on the first call, 0 included).
REDRIVE_CLAIM = r"""
local unpack = unpack or table.unpack
local have = redis.call('HGET', KEYS[2], ARGV[1])
if have then return tonumber(have) end
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', ARGV[2])
for _, e in ipairs(entries) do
  local f = e[2]
  f[#f + 1] = 'redrive_id'
  f[#f + 1] = e[1]
  redis.call('XADD', KEYS[3], '*', unpack(f))
  redis.call('XDEL', KEYS[1], e[1])
end
redis.call('HSET', KEYS[2], ARGV[1], #entries)
return #entries
"""

# KEYS: epochs, commit, dlq stream, dlq ids hash, txid index hash.
# ARGV: epoch, txid, who, digest, field/value pairs. A task attempt's dead letter (fenced).
DLQ_ADD_FENCED = _NS_FENCE + _DLQ_ADD + r"""
local err = ns_fence(KEYS[1], KEYS[2], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
return dlq_add(KEYS[3], KEYS[4], KEYS[5], ARGV[4], 5)
"""

# KEYS: epochs, commit, marker, sink stream. ARGV: epoch, txid, who, component, task, then
# (stream, values JSON)*. A task's leaf emits of one txid go in once: a later attempt finds
# the marker and adds nothing (its emits are the same: a task is a pure function).
SINK_PUT = _NS_FENCE + r"""
local err = ns_fence(KEYS[1], KEYS[2], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
for i = 6, #ARGV, 2 do
  redis.call('XADD', KEYS[4], '*', 'component', ARGV[4], 'stream', ARGV[i], 'txid', ARGV[2],
             'task', ARGV[5], 'values', ARGV[i + 1])
end
redis.call('SET', KEYS[3], 1)
return (#ARGV - 5) / 2
"""

# KEYS: epochs, commit, stats hash. ARGV: epoch, txid, who, ttl secs, (field, record)*.
# A task's counters of one txid: a later attempt's record replaces its field.
STATS_PUT = _NS_FENCE + r"""
local err = ns_fence(KEYS[1], KEYS[2], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
redis.call('HSET', KEYS[3], unpack(ARGV, 5))
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1
"""

__all__ = ["DLQ_ADD", "DLQ_ADD_FENCED", "DLQ_DISCARD", "REDRIVE_CLAIM", "REDRIVE_MOVE",
           "SINK_PUT", "STATS_PUT"]
