-- Writes a snapshot of another thread (`snapshot_thread.lua`) as a new
-- thread, all of it or nothing. The source lies in another slot, so it
-- was read by a script of its own; this one touches only the new
-- thread's keys.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash, 4 history list
-- ARGV: 1-4 how many values of meta (field/value pairs flattened), log,
--       files (path/file pairs flattened) and history follow, then the
--       values in that order
-- Returns 0 (nothing written) when the new thread already has any of
-- its keys, else 1.
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then
    return 0
  end
end

local at = 5
local function take(n)
  local out = {}
  for i = 1, n do
    out[i] = ARGV[at]
    at = at + 1
  end
  return out
end

local meta = take(tonumber(ARGV[1]))
local log = take(tonumber(ARGV[2]))
local files = take(tonumber(ARGV[3]))
local history = take(tonumber(ARGV[4]))
for i = 1, #meta, 2 do
  redis.call('HSET', KEYS[1], meta[i], meta[i + 1])
end
for _, entry in ipairs(log) do
  redis.call('RPUSH', KEYS[2], entry)
end
for i = 1, #files, 2 do
  redis.call('HSET', KEYS[3], files[i], files[i + 1])
end
for _, entry in ipairs(history) do
  redis.call('RPUSH', KEYS[4], entry)
end
return 1
