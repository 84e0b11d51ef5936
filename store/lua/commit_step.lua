-- Commits one step of a thread, fenced by a compare-and-set on its step
-- number. Everything it writes is proportional to what the step added: the
-- log only grows by RPUSH and files change one field at a time.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash, 4 run record,
--       5 fan-in hash, 6 fan-in expected count, 7 history list
-- ARGV: 1 the step being committed, 2 run record JSON,
--       3 state JSON ('' = unchanged), 4 pending JSON ('' = none),
--       5 fan-in expected count ('' = leave the fan-in alone),
--       6 tokens of the appended messages (added to the running total),
--       7 context cursor JSON ('' = unchanged),
--       8 the step's history entry (appended after the log length),
--       9 message count n, 10 .. 9+n messages,
--       then path, file pairs (file '' = delete the path)
-- Returns {1, new step} when committed, {0, current step} on a conflict,
-- {2, 0} when the run's record is gone (its thread was deleted or
-- expired): nothing is written, so a late step cannot bring it back.
local meta, log, files = KEYS[1], KEYS[2], KEYS[3]

if redis.call('EXISTS', KEYS[4]) == 0 then
  return {2, 0}
end

local current = redis.call('HGET', meta, 'step') or '0'
if current ~= ARGV[1] then
  return {0, tonumber(current)}
end

local n = tonumber(ARGV[9])
local first, last = 10, 9 + n
-- unpack() is bounded by Lua's C stack, so long message lists go in chunks.
for i = first, last, 1000 do
  redis.call('RPUSH', log, unpack(ARGV, i, math.min(i + 999, last)))
end

redis.call('RPUSH', KEYS[7], redis.call('LLEN', log), ARGV[8])

-- A reader holding the files reads them again when this moves.
if #ARGV > last then
  redis.call('HINCRBY', meta, 'files_rev', 1)
end
for i = last + 1, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', files, ARGV[i])
  else
    redis.call('HSET', files, ARGV[i], ARGV[i + 1])
  end
end

if ARGV[3] ~= '' then
  redis.call('HSET', meta, 'state', ARGV[3])
end
if ARGV[6] ~= '0' then
  redis.call('HINCRBY', meta, 'tokens', ARGV[6])
end
if ARGV[7] ~= '' then
  redis.call('HSET', meta, 'context', ARGV[7])
end
if ARGV[4] ~= '' then
  redis.call('HSET', meta, 'pending', ARGV[4])
else
  redis.call('HDEL', meta, 'pending')
end

redis.call('SET', KEYS[4], ARGV[2])

if ARGV[5] ~= '' then
  redis.call('DEL', KEYS[5])
  redis.call('SET', KEYS[6], ARGV[5])
end

return {1, redis.call('HINCRBY', meta, 'step', 1)}
