-- Puts a long-term item and indexes its namespace, in one step so a
-- search never sees an item whose namespace is missing from the index.
-- Keeps the first put's created_at.
--
-- KEYS: 1 the namespace's items hash, 2 the root label's namespace index
-- ARGV: 1 item key, 2 dot-joined namespace, 3 namespace JSON, 4 key JSON,
--       5 value JSON, 6 now (a JSON string)
local created = ARGV[6]
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local ok, item = pcall(cjson.decode, old)
  if ok and type(item) == 'table' and type(item.created_at) == 'string' then
    created = cjson.encode(item.created_at)
  end
end
local item = '{"namespace":' .. ARGV[3] .. ',"key":' .. ARGV[4] .. ',"value":' .. ARGV[5]
  .. ',"created_at":' .. created .. ',"updated_at":' .. ARGV[6] .. '}'
redis.call('HSET', KEYS[1], ARGV[1], item)
redis.call('ZADD', KEYS[2], 0, ARGV[2])
return 1
