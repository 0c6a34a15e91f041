"""The Lua scripts of the legacy targets a cut-over port writes (``state/target.py``,
``state/target_kafka.py``). Same rules as ``lua.py``: Redis's Lua 5.1 and fakeredis's
Lua 5.4; each script reads, decides, then writes.
"""

from __future__ import annotations

__all__ = ["TARGET_SCRIPTS"]

# A legacy target written by the port (``state/target.py``): KEYS[1] the target (a sorted
# set, a hash, or the prefix of string keys), KEYS[2] its guard hash (field: the writing
# ``component:task`` -> the last txid it applied). ARGV: who, txid, shape (zset | hash |
# keys), op (set | add), then key/value pairs. A txid at or below the guard's is a re-run
# of a batch already applied (or a zombie's): nothing is written. Values are decimal text.
TARGET_PUT = r"""
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '-1')
if tonumber(ARGV[2]) <= last then return 0 end
local shape, op = ARGV[3], ARGV[4]
for i = 5, #ARGV, 2 do
  local k, v = ARGV[i], ARGV[i + 1]
  if shape == 'zset' then
    if op == 'add' then redis.call('ZINCRBY', KEYS[1], v, k) else redis.call('ZADD', KEYS[1], v, k) end
  elseif shape == 'hash' then
    if op == 'add' then redis.call('HINCRBYFLOAT', KEYS[1], k, v) else redis.call('HSET', KEYS[1], k, v) end
  else
    if op == 'add' then redis.call('INCRBYFLOAT', KEYS[1] .. k, v) else redis.call('SET', KEYS[1] .. k, v) end
  end
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
"""

# A Kafka target's guard (``state/target_kafka.py``), before a task produces txid N:
# KEYS[1] the guard hash (field ``who``: the last txid produced whole; ``who:intent``:
# "txid|json" of the attempt under way). ARGV: who, txid, json (where the topic's
# partitions ended before producing). Returns {0, ''}: produced already (or a zombie of an
# older txid): produce nothing; {1, ''}: intent recorded, produce everything; {2, held}: an
# earlier attempt of this txid began producing: recover from its intent.
KAFKA_INTENT = r"""
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
local txid = tonumber(ARGV[2])
if txid <= done then return {0, ''} end
local held = redis.call('HGET', KEYS[1], ARGV[1] .. ':intent')
if held then
  local t = tonumber(string.match(held, '^(%d+)|'))
  if t == txid then return {2, held} end
  if t > txid then return {0, ''} end
end
redis.call('HSET', KEYS[1], ARGV[1] .. ':intent', ARGV[2] .. '|' .. ARGV[3])
return {1, ''}
"""

# After the task's messages of txid N are in the topic (committed): KEYS[1] the guard
# hash, ARGV who, txid. The last txid produced only grows; the intent is dropped.
KAFKA_DONE = r"""
local done = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '-1')
if tonumber(ARGV[2]) <= done then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[1], ARGV[1] .. ':intent')
return 1
"""

TARGET_SCRIPTS: dict[str, str] = {
    "target_put": TARGET_PUT,
    "kafka_intent": KAFKA_INTENT,
    "kafka_done": KAFKA_DONE,
}
