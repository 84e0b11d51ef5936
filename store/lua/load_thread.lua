-- Reads a thread's meta, log and files in one go, so a checkpoint never
-- mixes the step of one commit with the messages of the next.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash
-- Returns {meta field/value pairs, log entries, files path/file pairs}.
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], 0, -1),
  redis.call('HGETALL', KEYS[3]),
}
