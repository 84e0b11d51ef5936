-- Replaces a thread's history with a shorter one (its newest checkpoint
-- only), if nothing was appended since it was read: the history is
-- append-only, so an unchanged length is an unchanged history. Keeps the
-- list's expiry.
--
-- KEYS: 1 history list
-- ARGV: 1 the length read, then the new entries
-- Returns 0 (nothing written) when the history changed since, else 1.
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then
  return 0
end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
for i = 2, #ARGV do
  redis.call('RPUSH', KEYS[1], ARGV[i])
end
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
