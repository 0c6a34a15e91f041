"""The duplicate checks' Lua scripts (``state/dedup.py``): exact ids and a Bloom filter.

Split from ``lua.py`` (the state's writes) because they are a concern of their own, with
their own key layout (``keys.dedup_key``: buckets and segments of one name's key group).
A check that records what it saw is a fenced write (``DEDUP_EXACT``, ``DEDUP_BLOOM``:
``lua_fence.py`` first); ``BLOOM_CHECK`` only reads. Same rules as ``lua.py``: checks
before writes, Redis's Lua 5.1 and fakeredis's Lua 5.4.
"""

from __future__ import annotations

from stormshift.state.lua_fence import FENCE

__all__ = ["BLOOM_CHECK", "DEDUP_BLOOM", "DEDUP_EXACT", "DEDUP_SCRIPTS"]

# KEYS: fence, live bucket hashes newest first. ARGV: epoch, txid, who, ttl_ms, ids...
# id -> first txid that saw it; a duplicate is an id seen under ANOTHER txid (a replay of
# the same batch is not its own duplicate). Returns 1/0 per id.
DEDUP_EXACT = FENCE + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local txid = ARGV[2]
local out = {}
for i = 5, #ARGV do
  local id = ARGV[i]
  local dup, found = 0, false
  for b = 2, #KEYS do
    local t = redis.call('HGET', KEYS[b], id)
    if t then
      found = true
      if t ~= txid then dup = 1 end
      break
    end
  end
  if not found then redis.call('HSET', KEYS[2], id, txid) end
  out[#out + 1] = dup
end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return out
"""

# Time-segmented Bloom filter. KEYS: fence, pending bitmap, pending meta hash, expired
# segment, live segments newest first (KEYS[5] = current). ARGV: epoch, txid, who, ttl_ms,
# m, k, then h1, h2 per id (positions (h1 + i*h2) % m, i < k). Bits of the running txid go
# to the pending bitmap, merged into their segment once a later txid arrives, so a
# replayed batch never counts its own ids as duplicates.
_BLOOM_HAS = r"""
local function has(key, h1, h2, m, k)
  for i = 0, k - 1 do
    if redis.call('GETBIT', key, (h1 + i * h2) % m) == 0 then return false end
  end
  return true
end
"""
DEDUP_BLOOM = FENCE + _BLOOM_HAS + r"""
local err = fence(KEYS[1], ARGV[3], ARGV[1], ARGV[2])
if err then return redis.error_reply(err) end
local txid = ARGV[2]
local ttl, m, k = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local pend = redis.call('HMGET', KEYS[3], 'txid', 'seg')
if pend[1] and pend[1] ~= txid then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    for s = 5, #KEYS do  -- merge into the segment the bits were written in, if still live
      if KEYS[s] == pend[2] then redis.call('BITOP', 'OR', KEYS[s], KEYS[s], KEYS[2]) end
    end
    redis.call('DEL', KEYS[2])
  end
end
if pend[1] ~= txid then redis.call('HSET', KEYS[3], 'txid', txid, 'seg', KEYS[5]) end
redis.call('DEL', KEYS[4])
local live = {}
for s = 5, #KEYS do
  if redis.call('EXISTS', KEYS[s]) == 1 then live[#live + 1] = KEYS[s] end
end
local out = {}
for i = 7, #ARGV, 2 do
  local h1, h2 = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local dup = 0
  for _, key in ipairs(live) do
    if has(key, h1, h2, m, k) then dup = 1; break end
  end
  if dup == 0 then
    for j = 0, k - 1 do redis.call('SETBIT', KEYS[2], (h1 + j * h2) % m, 1) end
  end
  out[#out + 1] = dup
end
for _, key in ipairs({KEYS[2], KEYS[3], KEYS[5]}) do
  if redis.call('EXISTS', key) == 1 then redis.call('PEXPIRE', key, ttl) end
end
return out
"""

# Read-only membership. KEYS: bitmaps to look in. ARGV: m, k, then h1, h2 per id.
BLOOM_CHECK = _BLOOM_HAS + r"""
local m, k = tonumber(ARGV[1]), tonumber(ARGV[2])
local live = {}
for s = 1, #KEYS do
  if redis.call('EXISTS', KEYS[s]) == 1 then live[#live + 1] = KEYS[s] end
end
local out = {}
for i = 3, #ARGV, 2 do
  local h1, h2 = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local hit = 0
  for _, key in ipairs(live) do
    if has(key, h1, h2, m, k) then hit = 1; break end
  end
  out[#out + 1] = hit
end
return out
"""

DEDUP_SCRIPTS: dict[str, str] = {
    "dedup_exact": DEDUP_EXACT,
    "dedup_bloom": DEDUP_BLOOM,
    "bloom_check": BLOOM_CHECK,
}
