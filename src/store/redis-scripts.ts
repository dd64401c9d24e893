// Lua scripts behind the Redis store's multi-step operations. Each runs atomically on the server
// and reads time with redis.call('TIME') (server ms), so replicas with skewed clocks still agree
// on windows and hold expiry. They mirror memory-state.ts decision for decision.
//
// Must never: write before every check of an all-or-nothing step has passed, touch keys not passed
// in KEYS (cluster safety), or use the caller's clock for windows and holds.
import { createHash } from 'node:crypto';

export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function lua(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** Drops holds whose expiry (zset h) has passed from counter hash c. */
const PURGE_HOLDS = `
local function purge(c, h)
  local expired = redis.call('ZRANGEBYSCORE', h, '-inf', now)
  if #expired == 0 then return end
  for _, hid in ipairs(expired) do
    local a = redis.call('HGET', c, 'h:' .. hid)
    if a then
      redis.call('HDEL', c, 'h:' .. hid)
      redis.call('HINCRBY', c, 'held', -tonumber(a))
    end
  end
  redis.call('ZREMRANGEBYSCORE', h, '-inf', now)
end
`;

/**
 * KEYS: c1, h1, c2, h2, ...  ARGV: id, amount, holdMs, limit1 ('' = none), ttl1, limit2, ttl2, ...
 * Returns {1} or {0, index of refusing counter (1-based), spent, held}.
 */
export const RESERVE = lua(
  'reserve',
  `${NOW}${PURGE_HOLDS}
local id, amount, holdMs = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local n = #KEYS / 2
for i = 1, n do
  local c, h = KEYS[2 * i - 1], KEYS[2 * i]
  purge(c, h)
  local limit = ARGV[2 * i + 2]
  if limit ~= '' then
    local spent = tonumber(redis.call('HGET', c, 'spent') or 0)
    local held = tonumber(redis.call('HGET', c, 'held') or 0)
    local mine = tonumber(redis.call('HGET', c, 'h:' .. id) or 0)
    if spent + held - mine + amount > tonumber(limit) then
      return {0, i, spent, held}
    end
  end
end
for i = 1, n do
  local c, h, ttl = KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i + 3]
  local mine = tonumber(redis.call('HGET', c, 'h:' .. id) or 0)
  redis.call('HSET', c, 'h:' .. id, amount)
  redis.call('HINCRBY', c, 'held', amount - mine)
  redis.call('HSETNX', c, 'spent', 0)
  redis.call('ZADD', h, now + holdMs, id)
  redis.call('PEXPIRE', c, ttl)
  redis.call('PEXPIRE', h, ttl)
end
return {1}
`,
);

/**
 * Settle, add spend, or release. KEYS: c1, h1, ...  ARGV: id ('' = no hold), amount ('' = release
 * only: no spend, TTL untouched), ttl.
 */
export const SETTLE = lua(
  'settle',
  `${NOW}${PURGE_HOLDS}
local id, amount, ttl = ARGV[1], ARGV[2], ARGV[3]
for i = 1, #KEYS / 2 do
  local c, h = KEYS[2 * i - 1], KEYS[2 * i]
  purge(c, h)
  if id ~= '' then
    local mine = redis.call('HGET', c, 'h:' .. id)
    if mine then
      redis.call('HDEL', c, 'h:' .. id)
      redis.call('HINCRBY', c, 'held', -tonumber(mine))
      redis.call('ZREM', h, id)
    end
  end
  if amount ~= '' then
    redis.call('HINCRBY', c, 'spent', amount)
    redis.call('PEXPIRE', c, ttl)
    redis.call('PEXPIRE', h, ttl)
  end
end
return 1
`,
);

/** KEYS: c1, h1, ...  Returns {spent1, held1, spent2, held2, ...} after dropping expired holds. */
export const READ_COUNTERS = lua(
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

/**
 * Sliding-window log. KEYS: w1, p1, w2, p2, ...  ARGV: id, limit1, window1, limit2, window2, ...
 * Returns {1} or {0, index of the class that frees up last (1-based), retryAfterMs}.
 */
export const TAKE_SLOTS = lua(
  'takeSlots',
  `${NOW}
local id = ARGV[1]
local n = #KEYS / 2
local worst, worstWait = 0, 0
for i = 1, n do
  local w, p = KEYS[2 * i - 1], KEYS[2 * i]
  local limit, window = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  redis.call('ZREMRANGEBYSCORE', w, '-inf', now - window)
  local wait = redis.call('PTTL', p)
  if wait < 0 then wait = 0 end
  local used = redis.call('ZCARD', w)
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
if worst > 0 then return {0, worst, worstWait} end
for i = 1, n do
  local w, window = KEYS[2 * i - 1], ARGV[2 * i + 1]
  redis.call('ZADD', w, now, id)
  redis.call('PEXPIRE', w, window)
end
return {1}
`,
);

/** KEYS: pause key. ARGV: durationMs. Never shortens a longer pause. */
export const PAUSE_CLASS = lua(
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
export const LIMITER_STATE = lua(
  'limiterState',
  `${NOW}
local out = {}
for i = 1, #KEYS / 2 do
  local w, p = KEYS[2 * i - 1], KEYS[2 * i]
  local since = string.format('(%.0f', now - tonumber(ARGV[i]))
  out[#out + 1] = redis.call('ZCOUNT', w, since, '+inf')
  local left = redis.call('PTTL', p)
  if left < 0 then left = 0 end
  out[#out + 1] = left
end
return out
`,
);

/** KEYS: lock. ARGV: owner. Compare-and-delete. */
export const RELEASE_LOCK = lua(
  'releaseLock',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`,
);

/** KEYS: counter. ARGV: amount, ttl. */
export const INCR_BY = lua(
  'incrBy',
  `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return v
`,
);

/** KEYS: tag set. ARGV: member, ttl. The set lives as long as its longest-lived member. */
export const TAG_ADD = lua(
  'tagAdd',
  `
redis.call('SADD', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`,
);

/** KEYS: tag set. Returns its members and deletes it, in one step. */
export const TAG_TAKE = lua(
  'tagTake',
  `
local members = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1])
return members
`,
);

/**
 * Cache byte accounting. KEYS: sizes (hash key -> bytes), expiry (zset key -> expiry ms), bytes.
 * ARGV: 'set', key, size, ttl | 'del', key... | 'read'. Expired entries are subtracted lazily.
 */
export const CACHE_ACCOUNT = lua(
  'cacheAccount',
  `${NOW}
local sizes, expiry, bytes = KEYS[1], KEYS[2], KEYS[3]
local function forget(m)
  local s = redis.call('HGET', sizes, m)
  if s then
    redis.call('HDEL', sizes, m)
    redis.call('DECRBY', bytes, s)
  end
  redis.call('ZREM', expiry, m)
end
local function sweep(limit)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, limit)
  for _, m in ipairs(gone) do forget(m) end
end
local op = ARGV[1]
if op == 'set' then
  sweep(100)
  local old = tonumber(redis.call('HGET', sizes, ARGV[2]) or 0)
  redis.call('HSET', sizes, ARGV[2], ARGV[3])
  redis.call('ZADD', expiry, now + tonumber(ARGV[4]), ARGV[2])
  redis.call('INCRBY', bytes, tonumber(ARGV[3]) - old)
elseif op == 'del' then
  for i = 2, #ARGV do forget(ARGV[i]) end
else
  sweep(10000)
end
return tonumber(redis.call('GET', bytes) or 0)
`,
);

/**
 * KEYS: stream. ARGV: at ms, JSON record, max length. The id is <at>-<seq>, or the last id's ms
 * when `at` is older than it, so ids stay increasing and XRANGE by time works.
 */
export const LEDGER_APPEND = lua(
  'ledgerAppend',
  `
local ms, seq = tonumber(ARGV[1]), 0
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if last[1] then
  local lm, ls = string.match(last[1][1], '^(%d+)-(%d+)$')
  lm = tonumber(lm)
  if lm >= ms then ms, seq = lm, tonumber(ls) + 1 end
end
local id = string.format('%.0f-%.0f', ms, seq)
local ok, res = pcall(redis.call, 'XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], id, 'r', ARGV[2])
if ok then return res end
return redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'r', ARGV[2])
`,
);
