-- Frees an ended run's place in its batch's window and admits the next
-- waiting run in it, once: the answer is recorded under the ended run, so
-- a redelivered follow-up gets the same one (store/src/admission/window.rs).
--
-- KEYS: 1 size, 2 waiting list, 3 admitted set, 4 unstarted set, 5 after hash
-- ARGV: 1 the ended run's id
-- Returns the admitted run's id, '' for none, or false when the ended run
-- was never admitted here.
local done = redis.call('HGET', KEYS[5], ARGV[1])
if done then
  return done
end
if redis.call('SREM', KEYS[3], ARGV[1]) == 0 then
  return false
end
redis.call('SREM', KEYS[4], ARGV[1])
local next = ''
if redis.call('SCARD', KEYS[3]) < tonumber(redis.call('GET', KEYS[1]) or '0') then
  next = redis.call('LPOP', KEYS[2]) or ''
end
if next ~= '' then
  redis.call('SADD', KEYS[3], next)
  redis.call('SADD', KEYS[4], next)
end
redis.call('HSET', KEYS[5], ARGV[1], next)
return next
