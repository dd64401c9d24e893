// Lua scripts of the budget role (and the budget steps the money role's scripts reuse). They read
// time with redis.call('TIME') (server ms), so replicas with skewed clocks still agree on hold
// expiry. They mirror memory/memory-budgets.ts decision for decision.
//
// Must never: write before every check of an all-or-nothing step has passed, or touch keys outside
// the `{money}` hash tag.
import { type LuaScript, lua, NOW } from './lua.ts';

/**
 * Drops holds whose expiry (zset h) has passed from counter hash c. Needs `now`. Also defines
 * unhold(c, amount): takes a hold's amount off `held`. A hold of 0 (a call estimated free inside
 * a window) is skipped: Lua's -0 reaches Redis as "-0", which HINCRBY refuses as not an integer.
 */
const PURGE_HOLDS = `
local function unhold(c, amount)
  local n = tonumber(amount)
  if n ~= 0 then redis.call('HINCRBY', c, 'held', -n) end
end
local function purge(c, h)
  local expired = redis.call('ZRANGEBYSCORE', h, '-inf', now)
  if #expired == 0 then return end
  for _, hid in ipairs(expired) do
    local a = redis.call('HGET', c, 'h:' .. hid)
    if a then
      redis.call('HDEL', c, 'h:' .. hid)
      unhold(c, a)
    end
  end
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
end
`;

/**
 * reserve(n, id, amount, holdMs, off): KEYS[1..2n] = c1, h1, ...; counter i's limit ('' = none) is
 * ARGV[off + 2i - 1] and its ttl ARGV[off + 2i]. Returns {1, wrote} (wrote: 1 when a counter
 * was written, 0 when none was) or {0, refusing index, spent, held}.
 * A hold of 0 with none before it (a read an open window covers) changes no counter: nothing is
 * written, and a counter without a limit is not even read (the whole step is then a few reads).
 */
export const RESERVE_FN = `${NOW}${PURGE_HOLDS}
local function reserve(n, id, amount, holdMs, off)
  for i = 1, n do
    local c, h = KEYS[2 * i - 1], KEYS[2 * i]
    local limit = ARGV[off + 2 * i - 1]
    if limit ~= '' or amount ~= 0 then purge(c, h) end
    if limit ~= '' then
      local spent = tonumber(redis.call('HGET', c, 'spent') or 0)
      local held = tonumber(redis.call('HGET', c, 'held') or 0)
      local mine = tonumber(redis.call('HGET', c, 'h:' .. id) or 0)
      if spent + held - mine + amount > tonumber(limit) then
        return {0, i, spent, held}
      end
    end
  end
  local wrote = 0
  for i = 1, n do
    local c, h, ttl = KEYS[2 * i - 1], KEYS[2 * i], ARGV[off + 2 * i]
    local had = redis.call('HGET', c, 'h:' .. id)
    if amount ~= 0 or had then
      wrote = 1
      local mine = tonumber(had or 0)
      redis.call('HSET', c, 'h:' .. id, amount)
      redis.call('HINCRBY', c, 'held', amount - mine)
      redis.call('HSETNX', c, 'spent', 0)
      redis.call('ZADD', h, now + holdMs, id)
      redis.call('PEXPIRE', c, ttl)
      redis.call('PEXPIRE', h, ttl)
    end
  end
  return {1, wrote}
end
`;

/** settle(c, h, id ('' = no hold), amount ('' = release only: no spend, TTL untouched), ttl). */
export const SETTLE_FN = `${NOW}${PURGE_HOLDS}
local function settle(c, h, id, amount, ttl)
  purge(c, h)
  if id ~= '' then
    local mine = redis.call('HGET', c, 'h:' .. id)
    if mine then
      redis.call('HDEL', c, 'h:' .. id)
      unhold(c, mine)
      redis.call('ZREM', h, id)
    end
  end
  if amount ~= '' then
    redis.call('HINCRBY', c, 'spent', amount)
    redis.call('PEXPIRE', c, ttl)
    redis.call('PEXPIRE', h, ttl)
  end
end
`;

/**
 * KEYS: c1, h1, c2, h2, ...  ARGV: id, amount, holdMs, limit1 ('' = none), ttl1, limit2, ttl2, ...
 * Returns {1} or {0, index of refusing counter (1-based), spent, held}.
 */
export const RESERVE: LuaScript = lua(
  'reserve',
  `${RESERVE_FN}
return reserve(#KEYS / 2, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), 3)
`,
);

/**
 * Settle, add spend, or release. KEYS: c1, h1, ...  ARGV: id ('' = no hold), amount ('' = release
 * only: no spend, TTL untouched), ttl.
 */
export const SETTLE: LuaScript = lua(
  'settle',
  `${SETTLE_FN}
for i = 1, #KEYS / 2 do
  settle(KEYS[2 * i - 1], KEYS[2 * i], ARGV[1], ARGV[2], ARGV[3])
end
return 1
`,
);

/** KEYS: c1, h1, ...  Returns {spent1, held1, spent2, held2, ...} after dropping expired holds. */
export const READ_COUNTERS: LuaScript = lua(
  'readCounters',
  `${NOW}${PURGE_HOLDS}
local out = {}
for i = 1, #KEYS / 2 do
  local c, h = KEYS[2 * i - 1], KEYS[2 * i]
  purge(c, h)
  out[#out + 1] = tonumber(redis.call('HGET', c, 'spent') or 0)
  out[#out + 1] = tonumber(redis.call('HGET', c, 'held') or 0)
end
return out
`,
);
