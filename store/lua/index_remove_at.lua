-- Removes a member from a record index only if its score is still the
-- one a reader saw: a record re-created (and re-indexed with a new score)
-- after the reader found it missing keeps its entry.
--
-- KEYS: 1 the index (a sorted set)
-- ARGV: 1 member, 2 the score seen
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
