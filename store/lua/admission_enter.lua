-- Enters a run into its batch's admission (see store/src/admission/window.rs,
-- which this follows): admitted if the window has room and nobody waits,
-- else at the back of the line. Idempotent on the run: one entered before
-- is never to be published again here (the intake that entered it does,
-- and the sweep restarts one left unstarted).
--
-- KEYS: 1 size, 2 waiting list, 3 members set, 4 admitted set, 5 unstarted set
-- ARGV: 1 run id, 2 window size
-- Returns 1 when the run's first step is to be published, else 0.
redis.call('SET', KEYS[1], ARGV[2])
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 1 then
  return 0
end
redis.call('SADD', KEYS[3], ARGV[1])
if redis.call('LLEN', KEYS[2]) == 0 and redis.call('SCARD', KEYS[4]) < tonumber(ARGV[2]) then
  redis.call('SADD', KEYS[4], ARGV[1])
  redis.call('SADD', KEYS[5], ARGV[1])
  return 1
end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 0
