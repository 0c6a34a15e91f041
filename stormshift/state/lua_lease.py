"""The Lua scripts of a namespace's run lease (``state/lease.py`` says what a lease is).

The lease hash ``ss:{ns}:lease`` sits on the namespace's own slot, beside the commit
record, so the commit can be made conditional on it in one script. Time is the
server's (``TIME``): every host judges a lease's expiry by the same clock. Each
script reads, decides, then writes, so a refused call writes nothing. Same rules as
``lua.py``: Redis's Lua 5.1 and fakeredis's Lua 5.4.

Fields: ``holder`` (the run's token), ``epoch`` (grows by one at every acquisition
while the hash exists: a takeover of a live or lapsed lease bumps it), ``host``, ``pid``, ``checkpoint``, ``topology``, ``started_ms``,
``renewed_ms``, ``expires_ms``, ``ttl_ms``, ``batches``; ``stop_ms`` while a
``stormshift stop`` asks the holder to stop; ``yielded`` (the token of a run that
saw it was taken over and has stopped its query). A released lease is deleted. The
commit checks the token and the epoch: tokens are random, so a released and re-taken
lease (epoch 1 again) still refuses every earlier run.
"""

from __future__ import annotations

__all__ = ["LEASE_SCRIPTS"]

_NOW = r"""
local unpack = unpack or table.unpack
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_s = string.format('%.0f', now)
"""

# KEYS: lease. ARGV: token, takeover ('1', '0', or 'gone:TOKEN': take it from the holder
# TOKEN, whose process is known to have ended), ttl_ms, then field/value pairs (host, pid,
# checkpoint, topology). Returns {status, epoch, now, previous HGETALL}: status 'live'
# (refused, nothing written), 'free', 'lapsed' (its holder stopped renewing), 'gone' or
# 'takeover'.
LEASE_ACQUIRE = _NOW + r"""
local prior = redis.call('HGETALL', KEYS[1])
local holder = redis.call('HGET', KEYS[1], 'holder')
local status = 'free'
if holder then
  local expires = tonumber(redis.call('HGET', KEYS[1], 'expires_ms') or '0')
  if now < expires then
    if ARGV[2] == '1' then
      status = 'takeover'
    elseif ARGV[2] == 'gone:' .. holder then
      status = 'gone'
    else
      return {'live', '0', now_s, prior}
    end
  else
    status = 'lapsed'
  end
end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HDEL', KEYS[1], 'stop_ms', 'yielded')
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'started_ms', now_s, 'renewed_ms', now_s,
  'expires_ms', string.format('%.0f', now + tonumber(ARGV[3])), 'ttl_ms', ARGV[3],
  'batches', '0', unpack(ARGV, 4))
return {status, tostring(epoch), now_s, prior}
"""

# KEYS: lease. ARGV: token, epoch, ttl_ms, batches ('' keeps it). Returns {'ok', now,
# stop_ms or ''} while the lease is this run's, else {'lost', now, HGETALL}.
LEASE_RENEW = _NOW + r"""
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch', 'stop_ms')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then
  return {'lost', now_s, redis.call('HGETALL', KEYS[1])}
end
redis.call('HSET', KEYS[1], 'renewed_ms', now_s,
  'expires_ms', string.format('%.0f', now + tonumber(ARGV[3])))
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'batches', ARGV[4]) end
return {'ok', now_s, h[3] or ''}
"""

# KEYS: lease. ARGV: token, epoch. Deletes the lease if it is still this run's (1), so a
# run refused after taking it leaves the server as it found it; else marks that this run,
# taken over, has stopped (``yielded``) and returns 0.
LEASE_RELEASE = r"""
local h = redis.call('HMGET', KEYS[1], 'holder', 'epoch')
if h[1] == ARGV[1] and h[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
if h[1] then redis.call('HSET', KEYS[1], 'yielded', ARGV[1]) end
return 0
"""

# KEYS: lease. Asks the live holder to stop: {'ok', now, HGETALL}; {'none', now, HGETALL}
# when no run holds it (never held, released, or lapsed: nothing written).
LEASE_STOP = _NOW + r"""
local expires = tonumber(redis.call('HGET', KEYS[1], 'expires_ms') or '0')
if not redis.call('HGET', KEYS[1], 'holder') or now >= expires then
  return {'none', now_s, redis.call('HGETALL', KEYS[1])}
end
if not redis.call('HGET', KEYS[1], 'stop_ms') then redis.call('HSET', KEYS[1], 'stop_ms', now_s) end
return {'ok', now_s, redis.call('HGETALL', KEYS[1])}
"""

# KEYS: lease. {now, HGETALL}: one consistent read with the server's time.
LEASE_READ = _NOW + r"""
return {now_s, redis.call('HGETALL', KEYS[1])}
"""

# KEYS: commit record, lease. ARGV: txid, format version, token, lease epoch. The commit
# of a run whose lease was taken over is refused (Kafka's producer fencing): a zombie
# driver cannot commit once another run holds the namespace.
RECORD_COMMIT_LEASED = r"""
local h = redis.call('HMGET', KEYS[2], 'holder', 'epoch')
if h[1] ~= ARGV[3] or h[2] ~= ARGV[4] then
  return redis.error_reply('FENCED lease lost: commit of txid ' .. ARGV[1] ..
    ' refused (this run holds lease epoch ' .. ARGV[4] .. ', the namespace is at ' ..
    tostring(h[2] or '?') .. ')')
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'committed') or '-1')
local t = tonumber(ARGV[1])
if t < cur then
  return redis.error_reply('FENCED commit of txid ' .. ARGV[1] .. ' below committed ' .. cur)
end
redis.call('HSET', KEYS[1], 'committed', ARGV[1], 'format', ARGV[2])
return cur
"""

LEASE_SCRIPTS: dict[str, str] = {
    "lease_acquire": LEASE_ACQUIRE,
    "lease_renew": LEASE_RENEW,
    "lease_release": LEASE_RELEASE,
    "lease_stop": LEASE_STOP,
    "lease_read": LEASE_READ,
    "record_commit_leased": RECORD_COMMIT_LEASED,
}
