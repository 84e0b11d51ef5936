-- Puts a long-term item and indexes its namespace, in one step so a
-- search never sees an item whose namespace is missing from the index.
--
-- The caller builds the item (keeping the first put's created_at, which
-- it reads from the item it saw: items may be sealed, which Lua cannot
-- open), so the put is a compare-and-set on that item: a put in between
-- makes the caller read and build again, and no created_at is lost.
--
-- KEYS: 1 the namespace's items hash, 2 the root label's namespace index
-- ARGV: 1 item key, 2 dot-joined namespace, 3 the item as the caller read
--       it ('' = none), 4 the new item as stored
-- Returns 1 when put, 0 when the item changed since the caller read it.
local seen = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if seen ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
return 1
