-- Re-seals values of one key, each only if it is still what the caller
-- read: a value the fleet wrote in between is left as written (it was
-- sealed by its writer), so a rotation running beside workers never
-- loses a write.
--
-- KEYS: 1 the key
-- ARGV: 1 its kind: 'string', 'hash' or 'list',
--       then triples: where (hash field, list index, '' for a string),
--       the value as read, the value re-sealed
-- Returns how many values were replaced.
local key, kind = KEYS[1], ARGV[1]
local replaced = 0
for i = 2, #ARGV, 3 do
  local at, seen, sealed = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if kind == 'string' then
    if redis.call('GET', key) == seen then
      redis.call('SET', key, sealed, 'KEEPTTL')
      replaced = replaced + 1
    end
  elseif kind == 'hash' then
    if redis.call('HGET', key, at) == seen then
      redis.call('HSET', key, at, sealed)
      replaced = replaced + 1
    end
  elseif kind == 'list' then
    local index = tonumber(at)
    if redis.call('LINDEX', key, index) == seen then
      redis.call('LSET', key, index, sealed)
      replaced = replaced + 1
    end
  end
end
return replaced
