-- Expires or deletes everything one thread owns in its slot: the
-- checkpoint, the sets of its run ids and subagent threads, and each run's
-- record, fan-in, fan-in count and cancel flag. The caller handles what
-- lies in other slots (run id index, streams, subagent threads) with the
-- ids this returns.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash, 4 run id set,
--       5 subagent thread set, 6 history list
-- ARGV: 1 seconds to live ('0' = delete now),
--       2 the run that ended ('' = whatever runs the thread has),
--       3 the thread's key prefix, which its runs' keys extend
-- Returns nil when ARGV[2] is no longer the thread's latest run (a later
-- run keeps the thread alive; nothing changed), else
-- {run ids, subagent thread ids}.
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'latest') ~= ARGV[2] then
  return false
end

local runs = redis.call('SMEMBERS', KEYS[4])
local children = redis.call('SMEMBERS', KEYS[5])
local keys = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}
local prefix = ARGV[3]
for _, run in ipairs(runs) do
  keys[#keys + 1] = prefix .. 'run:' .. run
  keys[#keys + 1] = prefix .. 'fanin:' .. run
  keys[#keys + 1] = prefix .. 'fanin:' .. run .. ':n'
  keys[#keys + 1] = prefix .. 'cancel:' .. run
end

local ttl = tonumber(ARGV[1])
for _, key in ipairs(keys) do
  if ttl == 0 then
    redis.call('DEL', key)
  else
    redis.call('EXPIRE', key, ttl)
  end
end
return {runs, children}
