-- Takes a slot for a run in every pool it is limited by, all or none: a
-- pool the run holds a slot of already costs nothing, and a pool at its
-- limit takes nothing from any pool.
--
-- KEYS: the pools' sets of holders (one tenant's, so one hash tag)
-- ARGV: 1 run id, then each pool's limit in KEYS' order
-- Returns {full, added}: the 1-based index of the first full pool (0
-- when every slot was taken) and how many slots the run newly took.
local run = ARGV[1]
for i, key in ipairs(KEYS) do
  if redis.call('SISMEMBER', key, run) == 0
      and redis.call('SCARD', key) >= tonumber(ARGV[i + 1]) then
    return {i, 0}
  end
end
local added = 0
for _, key in ipairs(KEYS) do
  added = added + redis.call('SADD', key, run)
end
return {0, added}
