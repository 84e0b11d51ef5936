-- Creates a run and seeds its thread, once: a run that exists already is
-- left alone (SET NX semantics), so a repeated intake writes nothing.
--
-- The seed's state is merged by the caller (Lua's cjson would turn empty
-- arrays into objects and round large numbers), so this script only checks
-- that the state it merged into is still the thread's state.
--
-- The run becomes the thread's latest, and a thread whose keys were set to
-- expire (its last run ended) lives again: its keys are made permanent,
-- those of its earlier runs too.
--
-- KEYS: 1 run record, 2 meta hash, 3 log list, 4 files hash,
--       5 run id set, 6 subagent thread set, 7 history list
-- ARGV: 1 run record JSON, 2 '1' when the state changes,
--       3 the state the caller merged into ('' = none),
--       4 the merged state JSON, 5 tokens of the seed messages,
--       6 the run id, 7 the thread's key prefix (its runs' keys extend it),
--       8 the seed's history entry ('' = none; appended after the log
--       length), 9 message count n, 10 .. 9+n messages,
--       then path, file pairs
-- Returns nil when the run existed, -1 when the state moved under the
-- caller (merge again and retry), else the thread's step.
if redis.call('EXISTS', KEYS[1]) == 1 then
  return false
end

local meta = KEYS[2]
if ARGV[2] == '1' then
  local seen = redis.call('HGET', meta, 'state') or ''
  if seen ~= ARGV[3] then
    return -1
  end
  redis.call('HSET', meta, 'state', ARGV[4])
end

if redis.call('TTL', meta) >= 0 then
  for _, key in ipairs({meta, KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]}) do
    redis.call('PERSIST', key)
  end
  local prefix = ARGV[7]
  for _, run in ipairs(redis.call('SMEMBERS', KEYS[5])) do
    redis.call('PERSIST', prefix .. 'run:' .. run)
    redis.call('PERSIST', prefix .. 'fanin:' .. run)
    redis.call('PERSIST', prefix .. 'fanin:' .. run .. ':n')
    redis.call('PERSIST', prefix .. 'cancel:' .. run)
  end
end

redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[5], ARGV[6])
redis.call('HSET', meta, 'latest', ARGV[6])

if ARGV[5] ~= '0' then
  redis.call('HINCRBY', meta, 'tokens', ARGV[5])
end

local n = tonumber(ARGV[9])
local first, last = 10, 9 + n
-- unpack() is bounded by Lua's C stack, so long seeds go in chunks.
for i = first, last, 1000 do
  redis.call('RPUSH', KEYS[3], unpack(ARGV, i, math.min(i + 999, last)))
end
-- A reader holding the files reads them again when this moves.
if #ARGV > last then
  redis.call('HINCRBY', meta, 'files_rev', 1)
end
for i = last + 1, #ARGV, 2 do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
end
if ARGV[8] ~= '' then
  redis.call('RPUSH', KEYS[7], redis.call('LLEN', KEYS[3]), ARGV[8])
end

return tonumber(redis.call('HGET', meta, 'step') or '0')
