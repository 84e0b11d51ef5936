-- Reads a thread's meta, conversation and files in one go, so a
-- checkpoint never mixes the step of one commit with the messages of the
-- next. The conversation is the log from the meta's `base` on (the
-- entries before it are branches an update left behind).
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash
-- Returns {meta field/value pairs, conversation entries, files path/file pairs}.
local base = tonumber(redis.call('HGET', KEYS[1], 'base') or '0')
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], base, -1),
  redis.call('HGETALL', KEYS[3]),
}
