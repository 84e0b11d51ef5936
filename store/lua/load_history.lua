-- Reads a thread's log and history in one go, so a checkpoint's log
-- length never points past the log read beside it.
--
-- KEYS: 1 log list, 2 history list
-- Returns {log entries, history entries}.
return {
  redis.call('LRANGE', KEYS[1], 0, -1),
  redis.call('LRANGE', KEYS[2], 0, -1),
}
