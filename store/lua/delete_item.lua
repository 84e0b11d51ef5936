-- Deletes a long-term item; the namespace leaves the index with its last
-- item, in the same step, so listings show only namespaces holding items.
--
-- KEYS: 1 the namespace's items hash, 2 the root label's namespace index
-- ARGV: 1 item key, 2 dot-joined namespace
local deleted = redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return deleted
