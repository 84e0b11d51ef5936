-- The rate limiter's buckets of one provider account and model: the
-- arithmetic of deepfleet-model's `ratelimit/bucket.rs`, atomic for every
-- worker, on the Redis server's clock.
--
-- KEYS[1]: the buckets (a hash: l1..l4 levels, c1..c4 learned limits,
--          t updated at, b blocked until; milliseconds)
-- KEYS[2]: the claim of the caller (same hash tag), when it names one
-- ARGV[1]: the operation; ARGV[2..5]: the configured limits per minute
--          (0 = none), in the order requests, tokens, input, output
--
-- acquire: ARGV[6..9] cost, ARGV[10] max wait ms, ARGV[11] 1 = claim
--          -> {1 = go | 0 = later | 2 = unmetered (nothing taken), wait ms}
-- record:  ARGV[6..9] taken, ARGV[10..13] used -> 1
-- observe: ARGV[6..9] limits, ARGV[10..13] remaining, ARGV[14..17]
--          resets ms, ARGV[18] blocked ms (-1 = none) -> levels as
--          strings ("" = none)

local WINDOW = 60000
local IDLE_TTL = 3600000
-- A bucket never holds the last second of its limit (see HEADROOM in
-- bucket.rs).
local HEADROOM = 1 / 60

local function ceiling(cap)
  return cap * (1 - HEADROOM)
end

local state, claim = KEYS[1], KEYS[2]
local op = ARGV[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local stored = {}
local fields = redis.call('HGETALL', state)
for i = 1, #fields, 2 do
  stored[fields[i]] = tonumber(fields[i + 1])
end
local level, learned = {}, {}
for d = 1, 4 do
  level[d] = stored['l' .. d]
  learned[d] = stored['c' .. d]
end
local updated = stored['t'] or now
local blocked = stored['b'] or 0

local function arg(i)
  return tonumber(ARGV[i])
end

local function caps()
  local out = {}
  for d = 1, 4 do
    local configured, taught = arg(1 + d), learned[d]
    local cap = nil
    if configured > 0 and taught and taught > 0 then
      cap = math.min(configured, taught)
    elseif configured > 0 then
      cap = configured
    elseif taught and taught > 0 then
      cap = taught
    end
    out[d] = cap
  end
  return out
end

local function refill(cap)
  local elapsed = math.max(0, now - updated)
  for d = 1, 4 do
    if cap[d] then
      level[d] = math.min(ceiling(cap[d]), (level[d] or ceiling(cap[d])) + elapsed * cap[d] / WINDOW)
    else
      level[d] = nil
    end
  end
  updated = math.max(updated, now)
end

local function save()
  for d = 1, 4 do
    if level[d] then
      redis.call('HSET', state, 'l' .. d, tostring(level[d]))
    else
      redis.call('HDEL', state, 'l' .. d)
    end
    if learned[d] then
      redis.call('HSET', state, 'c' .. d, tostring(learned[d]))
    end
  end
  redis.call('HSET', state, 't', tostring(updated), 'b', tostring(blocked))
  redis.call('PEXPIRE', state, IDLE_TTL)
end

local function block(for_ms)
  blocked = math.max(blocked, now + for_ms)
end

if op == 'acquire' then
  local max_wait, has_claim = arg(10), arg(11) == 1
  if has_claim then
    local at = redis.call('GET', claim)
    if at then
      local wait = math.max(0, math.max(tonumber(at), blocked) - now)
      if wait <= max_wait then
        redis.call('DEL', claim)
        return {1, wait}
      end
      return {0, wait}
    end
  end
  local cap = caps()
  if not (cap[1] or cap[2] or cap[3] or cap[4]) and blocked <= now then
    return {2, 0}
  end
  refill(cap)
  local wait = math.max(0, blocked - now)
  for d = 1, 4 do
    if cap[d] and level[d] then
      local cost = math.min(arg(5 + d), cap[d])
      local short = cost - level[d]
      if short > 0 then
        wait = math.max(wait, short * WINDOW / cap[d])
      end
      level[d] = level[d] - cost
    end
  end
  wait = math.ceil(wait)
  save()
  if has_claim and wait > max_wait then
    redis.call('SET', claim, tostring(now + wait), 'PX', wait + IDLE_TTL)
    return {0, wait}
  end
  return {1, wait}
elseif op == 'record' then
  local cap = caps()
  refill(cap)
  for d = 1, 4 do
    if cap[d] and level[d] then
      level[d] = math.min(ceiling(cap[d]), level[d] + arg(5 + d) - arg(9 + d))
    end
  end
  save()
  return 1
elseif op == 'observe' then
  for d = 1, 4 do
    if arg(5 + d) > 0 then
      learned[d] = arg(5 + d)
    end
  end
  local cap = caps()
  refill(cap)
  for d = 1, 4 do
    local remaining = arg(9 + d)
    if remaining >= 0 then
      if level[d] then
        level[d] = math.min(level[d], remaining)
      elseif remaining == 0 and arg(13 + d) >= 0 then
        block(arg(13 + d))
      end
    end
  end
  if arg(18) >= 0 then
    block(arg(18))
  end
  save()
  local out = {}
  for d = 1, 4 do
    out[d] = level[d] and tostring(level[d]) or ''
  end
  return out
end
return redis.error_reply('rate_limit.lua: unknown operation ' .. tostring(op))
