-- Reads a thread's conversation from an index on: the log from the
-- meta's `base` plus that index.
--
-- KEYS: 1 meta hash, 2 log list
-- ARGV: 1 the index in the conversation
-- Returns {base, entries}.
local base = tonumber(redis.call('HGET', KEYS[1], 'base') or '0')
return {base, redis.call('LRANGE', KEYS[2], base + tonumber(ARGV[1]), -1)}
