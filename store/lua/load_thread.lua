-- Reads a thread's meta, conversation and files in one go, so a
-- checkpoint never mixes the step of one commit with the messages of the
-- next. The conversation is the log from the meta's `base` on (the
-- entries before it are branches an update left behind).
--
-- A caller that holds an earlier read of the thread names it and gets
-- only what it lacks: the log from where its copy ends, and the files
-- only when they were written since. Its copy is good while the thread is
-- the same generation: `gen` is a random id the first read gives a
-- thread, so a thread deleted and created again (or a copy: the copy
-- leaves `gen` behind) is another one. Within a generation the log only
-- grows, the base only moves forward, and every write of the files
-- raises `files_rev`.
--
-- KEYS: 1 meta hash, 2 log list, 3 files hash
-- ARGV: 1 the generation held ('' = nothing held), 2 the log index the
--       held conversation starts at, 3 the log length held, 4 the files
--       revision held, 5 the generation to give a thread that has none
-- Returns {meta field/value pairs, the log index the entries start at,
--          entries, files path/file pairs, 1 when the files were read}.
local meta, log, files = KEYS[1], KEYS[2], KEYS[3]
local base = tonumber(redis.call('HGET', meta, 'base') or '0')

local gen = redis.call('HGET', meta, 'gen')
if not gen and redis.call('EXISTS', meta) == 1 then
  gen = ARGV[5]
  redis.call('HSET', meta, 'gen', gen)
end

local held = gen and gen == ARGV[1]
local from = base
if held and tonumber(ARGV[2]) <= base and tonumber(ARGV[3]) <= redis.call('LLEN', log) then
  from = math.max(base, tonumber(ARGV[3]))
end

local read_files = not (held and (redis.call('HGET', meta, 'files_rev') or '0') == ARGV[4])
return {
  redis.call('HGETALL', meta),
  from,
  redis.call('LRANGE', log, from, -1),
  read_files and redis.call('HGETALL', files) or {},
  read_files and 1 or 0,
}
