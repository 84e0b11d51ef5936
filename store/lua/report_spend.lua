-- Records a run's cumulative own cost against a spend account, keeping
-- only its highest report, and moves the account's total by the rise.
--
-- KEYS: 1 the account hash
-- ARGV: 1 run id (a field; `total` is no run id), 2 the run's own cost so
--       far in nano-dollars, 3 the account's time to live in seconds
-- Returns the account's total.
local before = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local now = tonumber(ARGV[2])
local total
if now > before then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  total = redis.call('HINCRBY', KEYS[1], 'total', now - before)
else
  total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return total
