-- Writes a client's note on the thread's current checkpoint: the merged
-- notes beside the thread, and the patch as a history entry, if the
-- thread is still at the step and holds the notes it was read with (a
-- concurrent note or step makes the writer read again).
--
-- KEYS: 1 meta hash, 2 log list, 3 history list
-- ARGV: 1 expected step, 2 expected notes ('' = none), 3 the merged
--       notes, 4 the history entry
-- Returns 1 when written, 0 when the thread changed meanwhile.
local meta, log, history = KEYS[1], KEYS[2], KEYS[3]
local step = redis.call('HGET', meta, 'step') or '0'
local notes = redis.call('HGET', meta, 'notes') or ''
if step ~= ARGV[1] or notes ~= ARGV[2] then
  return 0
end
redis.call('HSET', meta, 'notes', ARGV[3])
redis.call('RPUSH', history, redis.call('LLEN', log), ARGV[4])
-- A thread set to expire keeps its time left.
local ttl = redis.call('PTTL', meta)
if ttl > 0 then
  redis.call('PEXPIRE', history, ttl)
end
return 1
