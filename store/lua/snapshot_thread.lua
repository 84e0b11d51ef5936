-- Reads everything a thread's copy takes in one go (meta, log, files and
-- history), so the copy never mixes one commit's step with the next's
-- messages. Values come back as stored (sealed or not): a copy needs
-- no opening.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash, 4 history list
-- Returns {meta field/value pairs, log entries, files path/file pairs,
-- history entries}.
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], 0, -1),
  redis.call('HGETALL', KEYS[3]),
  redis.call('LRANGE', KEYS[4], 0, -1),
}
