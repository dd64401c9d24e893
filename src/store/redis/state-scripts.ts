// Lua scripts of the cache role (tag sets, byte accounting) and of the state role's locks and
// listed-prefix indexes.
//
// Must never: touch keys not passed in KEYS.
import { type LuaScript, lua, NOW } from './lua.ts';

/** KEYS: lock. ARGV: owner. Compare-and-delete. */
export const RELEASE_LOCK: LuaScript = lua(
  'releaseLock',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`,
);

/**
 * KEYS: a listed prefix's index (zset: logical key -> expiry, gateway ms). ARGV: now, ttl, member.
 * Drops members past their expiry, adds (or moves) the member; the index lives as long as its
 * longest-lived member.
 */
export const INDEX_ADD: LuaScript = lua(
  'indexAdd',
  `
local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
`,
);

/** KEYS: a listed prefix's index. ARGV: now. Drops members past their expiry; returns the rest. */
export const INDEX_LIST: LuaScript = lua(
  'indexList',
  `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
return redis.call('ZRANGE', KEYS[1], 0, -1)
`,
);

/** KEYS: tag set. ARGV: member, ttl. The set lives as long as its longest-lived member. */
export const TAG_ADD: LuaScript = lua(
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
export const TAG_TAKE: LuaScript = lua(
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
export const CACHE_ACCOUNT: LuaScript = lua(
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
 * KEYS: cache entry. ARGV: expected leading bytes, new value. Replaces the value, keeping its
 * TTL, when the stored one starts with the expected bytes; returns the TTL left (ms), else 0.
 */
export const CACHE_REPLACE: LuaScript = lua(
  'cacheReplace',
  `
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
if redis.call('GETRANGE', KEYS[1], 0, #ARGV[1] - 1) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return ttl
`,
);

/** KEYS: lock. ARGV: owner, ttl. Compare-and-extend (lease renewal). */
export const RENEW_LOCK: LuaScript = lua(
  'renewLock',
  `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`,
);
