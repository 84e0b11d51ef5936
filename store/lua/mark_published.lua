-- Raises the thread's published step, never lowers it: a late redelivery
-- of an old step must not make newer follow-ups look unpublished.
--
-- A thread that is gone (deleted or expired) stays gone.
--
-- KEYS: 1 meta hash
-- ARGV: 1 the step whose follow-ups were published
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local published = tonumber(redis.call('HGET', KEYS[1], 'published') or '0')
if tonumber(ARGV[1]) > published then
  redis.call('HSET', KEYS[1], 'published', ARGV[1])
end
return 0
