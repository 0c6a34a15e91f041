"""The fence check every fenced write script of a key group runs first (``FENCE``).

Its own module because the scripts that start with it live in several (``lua.py``, the
state's writes; ``lua_dedup.py``, the duplicate checks): one text, prepended to each.
``fence(fence key, who, epoch, txid)`` returns an error string (prefixed ``FENCED``: a
stale epoch, or a txid at or below the committed one) or nil, and raises the task's
epoch in the fence when the attempt is newer; it never writes before its checks pass.
Redis's Lua 5.1 and fakeredis's Lua 5.4 alike.
"""

from __future__ import annotations

__all__ = ["FENCE"]

FENCE = r"""
local unpack = unpack or table.unpack
local function fence(fkey, who, epoch_s, txid_s)
  local epoch = tonumber(epoch_s)
  local txid = tonumber(txid_s)
  local cur_s = redis.call('HGET', fkey, who) or '-1'
  if epoch < tonumber(cur_s) then
    return 'FENCED stale epoch ' .. epoch_s .. ' for task ' .. who .. ' (current epoch ' .. cur_s .. ')'
  end
  local com_s = redis.call('HGET', fkey, '__committed') or '-1'
  if txid <= tonumber(com_s) then
    return 'FENCED txid ' .. txid_s .. ' is at or below the committed txid ' .. com_s
  end
  if epoch > tonumber(cur_s) then redis.call('HSET', fkey, who, epoch_s) end
  return nil
end
"""
