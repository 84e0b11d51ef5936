-- Writes a change made outside any step (update_state, a fork, a
-- rollback) as the thread's next checkpoint, with its history entry,
-- fenced by the step, conversation base and log length it was read at.
-- The log stays append-only: a new branch is written at its end and the
-- conversation's base moves there.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash, 4 history list
-- ARGV: 1 expected step, 2 expected base, 3 expected log length,
--       4 new base ('' = the conversation goes on), 5 tokens of the
--       written messages, 6 state JSON, 7 '1' to drop pending tool calls,
--       8 the update mark JSON, 9 the history entry,
--       10 message count n, 11 .. 10+n messages,
--       then path, file pairs: the thread's whole files after it
-- Returns {1, new step} when written, {0, current step} on a conflict.
local meta, log, files, history = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local step = redis.call('HGET', meta, 'step') or '0'
local base = redis.call('HGET', meta, 'base') or '0'
if step ~= ARGV[1] or base ~= ARGV[2] or redis.call('LLEN', log) ~= tonumber(ARGV[3]) then
  return {0, tonumber(step)}
end

if ARGV[4] ~= '' then
  redis.call('HSET', meta, 'base', ARGV[4], 'tokens', ARGV[5])
  redis.call('HDEL', meta, 'context')
elseif ARGV[5] ~= '0' then
  redis.call('HINCRBY', meta, 'tokens', ARGV[5])
end

local n = tonumber(ARGV[10])
local first, last = 11, 10 + n
-- unpack() is bounded by Lua's C stack, so long branches go in chunks.
for i = first, last, 1000 do
  redis.call('RPUSH', log, unpack(ARGV, i, math.min(i + 999, last)))
end

redis.call('DEL', files)
-- A reader holding the files reads them again when this moves.
redis.call('HINCRBY', meta, 'files_rev', 1)
for i = last + 1, #ARGV, 2 do
  redis.call('HSET', files, ARGV[i], ARGV[i + 1])
end

redis.call('HSET', meta, 'state', ARGV[6], 'update', ARGV[8])
if ARGV[7] == '1' then
  redis.call('HDEL', meta, 'pending')
end
local new = redis.call('HINCRBY', meta, 'step', 1)
-- Nothing to publish: a late delivery of the step before it skips.
redis.call('HSET', meta, 'published', new)
redis.call('RPUSH', history, redis.call('LLEN', log), ARGV[9])

-- A thread whose keys were set to expire keeps its time left: every key
-- written goes when the rest do.
local ttl = redis.call('PTTL', meta)
if ttl > 0 then
  for _, key in ipairs({log, files, history}) do
    redis.call('PEXPIRE', key, ttl)
  end
end

return {1, new}
