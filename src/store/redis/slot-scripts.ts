// Lua scripts of the slot role (the limiter's sliding-window logs and pauses). They read time with
// redis.call('TIME') (server ms), so replicas with skewed clocks still agree on windows. They
// mirror memory/memory-slots.ts decision for decision.
//
// Must never: write before every class of a take has passed, or touch keys not passed in KEYS.
import { type LuaScript, lua, NOW } from './lua.ts';

/**
 * The decision of a take, shared by both take scripts: for each of the n classes (KEYS w, p in
 * pairs; limit and window at ARGV[2i + at], ARGV[2i + at + 1]), drops starts older than the
 * window and finds how long until the class could take one more (its pause, or its oldest start
 * in the way leaving). Sets `worst`, `worstWait` (the class that frees up last), `waits` (each
 * class's pause left) and `useds` (each class's starts in its window). Writes nothing but the
 * expired starts.
 */
function decide(at: 0 | 1): string {
  return `local worst, worstWait = 0, 0
local waits, useds = {}, {}
for i = 1, n do
  local w, p = KEYS[2 * i - 1], KEYS[2 * i]
  local limit, window = tonumber(ARGV[2 * i + ${at}]), tonumber(ARGV[2 * i + ${at + 1}])
  redis.call('ZREMRANGEBYSCORE', w, '-inf', now - window)
  local wait = redis.call('PTTL', p)
  if wait < 0 then wait = 0 end
  waits[i] = wait
  local used = redis.call('ZCARD', w)
  useds[i] = used
  if used >= limit and not redis.call('ZSCORE', w, id) then
    local free = window
    if limit > 0 then
      local e = redis.call('ZRANGE', w, used - limit, used - limit, 'WITHSCORES')
      free = tonumber(e[2]) + window - now
    end
    if free > wait then wait = free end
  end
  if wait > worstWait then worst, worstWait = i, wait end
end
`;
}

/**
 * Appends the state of class `k` (KEYS w, p at 2k-1, 2k; its window in `window`) to `out`: the
 * starts in its window, and its pause left in ms. Reads only.
 */
function stateOf(k: string, window: string): string {
  return `  local w, p = KEYS[2 * ${k} - 1], KEYS[2 * ${k}]
  local since = string.format('(%.0f', now - tonumber(${window}))
  out[#out + 1] = redis.call('ZCOUNT', w, since, '+inf')
  local left = redis.call('PTTL', p)
  if left < 0 then left = 0 end
  out[#out + 1] = left
`;
}

/**
 * Sliding-window log. KEYS: w1, p1, w2, p2, ...  ARGV: id, limit1, window1, limit2, window2, ...
 * Returns {1} or {0, index of the class that frees up last (1-based), retryAfterMs}.
 */
export const TAKE_SLOTS: LuaScript = lua(
  'takeSlots',
  `${NOW}
local id = ARGV[1]
local n = #KEYS / 2
${decide(0)}if worst > 0 then return {0, worst, worstWait} end
for i = 1, n do
  local w, window = KEYS[2 * i - 1], ARGV[2 * i + 1]
  redis.call('ZADD', w, now, id)
  redis.call('PEXPIRE', w, window)
end
return {1}
`,
);

/**
 * TAKE_SLOTS, then the state of every class taken and of the classes only read, in one round
 * trip (the governor's take; the answer's X-RateLimit-* and the upstream-minute cap use them).
 * KEYS: w1, p1, ... for the n classes taken, then w, p of each class read.
 * ARGV: id, n, limit1, window1, ..., limitn, windown, then the window of each class read.
 * Returns {0, index of the class that frees up last (1-based), retryAfterMs} as TAKE_SLOTS does,
 * or {1, used1, pausedFor1, used2, pausedFor2, ...} over the classes taken, then those read.
 */
export const TAKE_SLOTS_READ: LuaScript = lua(
  'takeSlotsRead',
  `${NOW}
local id = ARGV[1]
local n = tonumber(ARGV[2])
${decide(1)}if worst > 0 then return {0, worst, worstWait} end
local out = {1}
for i = 1, n do
  local w, window = KEYS[2 * i - 1], ARGV[2 * i + 2]
  -- ZADD answers 1 for a new start, 0 for this id's own again (a retry): the count after it
  -- without one more ZCARD per class.
  out[#out + 1] = useds[i] + redis.call('ZADD', w, now, id)
  redis.call('PEXPIRE', w, window)
  out[#out + 1] = waits[i]
end
for j = n + 1, #KEYS / 2 do
${stateOf('j', 'ARGV[2 * n + 2 + (j - n)]')}end
return out
`,
);

/** KEYS: pause key. ARGV: durationMs. Never shortens a longer pause. */
export const PAUSE_CLASS: LuaScript = lua(
  'pauseClass',
  `
local left = redis.call('PTTL', KEYS[1])
if left < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
end
return 1
`,
);

/** KEYS: w1, p1, ...  ARGV: window1, ...  Returns {used1, pausedFor1, ...}. */
export const LIMITER_STATE: LuaScript = lua(
  'limiterState',
  `${NOW}
local out = {}
for i = 1, #KEYS / 2 do
${stateOf('i', 'ARGV[i]')}end
return out
`,
);
