-- Records a subagent's result for its parent's `task` call, once: a
-- redelivered child completion must not count twice.
--
-- KEYS: 1 fan-in hash, 2 fan-in expected count
-- ARGV: 1 tool_call_id, 2 child result JSON
-- Returns how many results the parent still waits for, or nil when the
-- parent is not waiting on a fan-in.
local expected = redis.call('GET', KEYS[2])
if not expected then
  return false
end
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
local remaining = tonumber(expected) - redis.call('HLEN', KEYS[1])
if remaining < 0 then
  return 0
end
return remaining
