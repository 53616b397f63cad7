package fleetlimit

import "github.com/redis/go-redis/v9"

// The key of a schema's limit, P being redis.key_prefix and S the
// schema's name as "<its length in bytes>:<name>" (the response cache's
// rule, so that no name makes its key start like another schema's):
//
//	P rl:S  the theoretical arrival time of the next turn (GCRA's TAT),
//	        Redis's clock in µs; it expires once that time has passed
//	        (a key that is gone is a full burst, as a TAT in the past is)
//
// takeScript hands out turns by GCRA (the generic cell rate algorithm):
// with T the interval between two turns (1/rate) and τ = burst × T, the
// next turn is at TAT + T and may be taken τ before that, so a quiet limit
// lets burst turns go at once and then one every T, over any window, not
// only aligned ones. It takes several callers' turns at once, in their
// order, each only if it comes within that caller's longest wait: a
// caller whose turn comes later is refused and takes nothing, and the
// next may still take it. Time is Redis's own (TIME), never a replica's,
// so replicas whose clocks differ share one timeline.
//
//	KEYS: P rl:S
//	ARGV: T in µs, τ in µs, then each caller's longest wait in µs
//	returns: each caller's delay until its turn in µs (0: now), or -1;
//	         for one caller, that integer alone (no list to allocate)
//
// redis.replicate_commands lets a Redis older than 5 write after TIME
// (later ones replicate a script's effects anyway).
const takeSource = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local out = {}
local taken = false
for i = 3, #ARGV do
  local nextTat = tat + interval
  local delay = nextTat - tolerance - now
  if delay < 0 then delay = 0 end
  if delay <= tonumber(ARGV[i]) then
    tat = nextTat
    taken = true
    out[#out + 1] = math.ceil(delay)
  else
    out[#out + 1] = -1
  end
end
if taken then
  redis.call('SET', KEYS[1], string.format('%.3f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
end
if #out == 1 then return out[1] end
return out
`

var takeScript = redis.NewScript(takeSource)
