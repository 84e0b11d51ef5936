-- Reads a thread's step, conversation base, log and history in one go,
-- so a checkpoint's log length never points past the log read beside it,
-- and an update built from them is fenced by what they were.
--
-- KEYS: 1 meta hash, 2 log list, 3 history list
-- Returns {step, base, log entries, history entries}.
return {
  redis.call('HGET', KEYS[1], 'step') or '0',
  redis.call('HGET', KEYS[1], 'base') or '0',
  redis.call('LRANGE', KEYS[2], 0, -1),
  redis.call('LRANGE', KEYS[3], 0, -1),
}
