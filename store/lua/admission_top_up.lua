-- Admits waiting runs of a batch until its window is full
-- (store/src/admission/window.rs).
--
-- KEYS: 1 size, 2 waiting list, 3 admitted set, 4 unstarted set
-- Returns the admitted runs' ids.
local size = tonumber(redis.call('GET', KEYS[1]) or '0')
local out = {}
while redis.call('SCARD', KEYS[3]) < size do
  local next = redis.call('LPOP', KEYS[2])
  if not next then
    break
  end
  redis.call('SADD', KEYS[3], next)
  redis.call('SADD', KEYS[4], next)
  out[#out + 1] = next
end
return out
