-- Moves a member of a record index to a new score only if its score is
-- still the one the caller saw: of several schedulers that read the same
-- due entry, exactly one moves it (and so fires it).
--
-- KEYS: 1 the index (a sorted set)
-- ARGV: 1 member, 2 the score seen, 3 the new score
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
  return 1
end
return 0
