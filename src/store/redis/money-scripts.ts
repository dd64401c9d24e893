// Lua scripts of the ledger and money roles. Every key they touch lies under the `{money}` hash
// tag: the fixed keys (pending entry, pending index, claim, ledger stream, window) come in KEYS;
// budget counters named inside a stored pending entry are derived from ARGV's key base (the same
// slot, so the script stays cluster-safe, as BullMQ-style queues do). One script per operation:
// each is the whole operation, all or none.
//
// Leases and coverage windows compare the `now` the caller passes (the gateway clock); budget
// hold expiry uses server TIME like the budget role.
//
// Must never: write before every check has passed, record one claim twice, or shorten a window.
import { RESERVE_FN, SETTLE_FN } from './budget-scripts.ts';
import { type LuaScript, lua } from './lua.ts';

/** append_ledger(stream, at, json, maxlen): ids <at>-<seq>, never older than the last id. */
const APPEND_FN = `
local function append_ledger(stream, at, body, maxlen)
  local ms, seq = tonumber(at), 0
  local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
  if last[1] then
    local lm, ls = string.match(last[1][1], '^(%d+)-(%d+)$')
    lm = tonumber(lm)
    if lm >= ms then ms, seq = lm, tonumber(ls) + 1 end
  end
  local id = string.format('%.0f-%.0f', ms, seq)
  local ok, res = pcall(redis.call, 'XADD', stream, 'MAXLEN', '~', maxlen, id, 'r', body)
  if ok then return res end
  return redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'r', body)
end
`;

/**
 * merge_window(w, wz, inn, kind 'dossier'|'requisites', until, now): max-merge into hash w {d, r};
 * the hash lives until its last window ends (from the caller's now); index wz: inn -> end.
 */
const WINDOW_FN = `
local function fmt(n) return string.format('%.0f', n) end
local function merge_window(w, wz, inn, kind, untilMs, nowMs)
  local d = tonumber(redis.call('HGET', w, 'd') or 0)
  local r = tonumber(redis.call('HGET', w, 'r') or 0)
  if kind == 'dossier' then
    if untilMs > d then d = untilMs end
  else
    if untilMs > r then r = untilMs end
    -- A requisites check's data ends an open dossier window (charge-store.ts, WindowOpening).
    if kind == 'requisites_check' and d > nowMs then d = nowMs end
  end
  local e = math.max(d, r)
  redis.call('ZREMRANGEBYSCORE', wz, '-inf', fmt(nowMs))
  if e - nowMs <= 0 then return end
  redis.call('HSET', w, 'd', fmt(d), 'r', fmt(r))
  redis.call('PEXPIRE', w, fmt(e - nowMs))
  redis.call('ZADD', wz, fmt(e), inn)
end
`;

/** Settling by counter name under key base ARGV[1]. */
const COUNTERS_FN = `
local function settle_named(base, name, id, amount, ttl)
  settle(base .. 'c:' .. name, base .. 'h:' .. name, id, amount, ttl)
end
local function pending_counters(p)
  local j = redis.call('HGET', p, 'j')
  if not j then return {} end
  return cjson.decode(j).counters or {}
end
`;

/** KEYS: stream. ARGV: at ms, JSON record, max length. */
export const LEDGER_APPEND: LuaScript = lua(
  'ledgerAppend',
  `${APPEND_FN}
return append_ledger(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
`,
);

/**
 * KEYS: c1, h1, ..., cn, hn, pending entry, pending index.
 * ARGV: id, amount, holdMs, limit1, ttl1, ..., json, owner, leaseUntil, at, entry ttl.
 * Returns reserve()'s answer; writes the entry only when every counter held. The entry's `z` is 1
 * when no counter was written (a hold of 0 with none before it): its release then has no counter
 * to settle.
 */
export const OPEN_CHARGE: LuaScript = lua(
  'openCharge',
  `${RESERVE_FN}
local n = (#KEYS - 2) / 2
local res = reserve(n, ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), 3)
if res[1] ~= 1 then return res end
local p, pz, a = KEYS[2 * n + 1], KEYS[2 * n + 2], 3 + 2 * n
redis.call('DEL', p)
redis.call('HSET', p, 'j', ARGV[a + 1], 'o', ARGV[a + 2], 'l', ARGV[a + 3], 'n', 0, 'z', 1 - res[2])
redis.call('PEXPIRE', p, ARGV[a + 5])
redis.call('ZADD', pz, ARGV[a + 4], ARGV[1])
return res
`,
);

/** KEYS: pending entry. ARGV: owner, leaseUntil. */
export const RENEW_CHARGE: LuaScript = lua(
  'renewCharge',
  `
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'l', ARGV[2])
if ARGV[3] and ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'u', ARGV[3]) end
return 1
`,
);

/** KEYS: pending entry. ARGV: owner, now, leaseUntil. Returns {j, o, l, n, u} or false. */
export const TAKE_OVER_CHARGE: LuaScript = lua(
  'takeOverCharge',
  `
local l = redis.call('HGET', KEYS[1], 'l')
if not l or tonumber(l) > tonumber(ARGV[2]) then return false end
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'l', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'n', 1)
return redis.call('HMGET', KEYS[1], 'j', 'o', 'l', 'n', 'u')
`,
);

/**
 * KEYS: pending entry, pending index, claim, stream, window, window index.
 * ARGV: key base, key, amount, counter ttl, claim value, claim ttl, entry at, entry json, ledger
 * max length, window kind ('' = none), window until, now, inn, n, counter names x n.
 * Returns {recorded 0|1, dossierUntil, requisitesUntil}.
 */
export const RECORD_CHARGE: LuaScript = lua(
  'recordCharge',
  `${SETTLE_FN}${APPEND_FN}${WINDOW_FN}${COUNTERS_FN}
local p, pz, claim, stream, w, wz = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local base, key = ARGV[1], ARGV[2]
local n = tonumber(ARGV[14])
local given = {}
for i = 1, n do given[ARGV[14 + i]] = true end
local held = pending_counters(p)
local recorded = 0
if redis.call('EXISTS', claim) == 0 then
  recorded = 1
  redis.call('SET', claim, ARGV[5], 'PX', ARGV[6])
  append_ledger(stream, ARGV[7], ARGV[8], ARGV[9])
  for i = 1, n do settle_named(base, ARGV[14 + i], key, ARGV[3], ARGV[4]) end
  if ARGV[10] ~= '' then merge_window(w, wz, ARGV[13], ARGV[10], tonumber(ARGV[11]), tonumber(ARGV[12])) end
else
  for i = 1, n do settle_named(base, ARGV[14 + i], key, '', 1) end
end
for _, name in ipairs(held) do
  if not given[name] then settle_named(base, name, key, '', 1) end
end
redis.call('DEL', p)
redis.call('ZREM', pz, key)
local wd = redis.call('HMGET', w, 'd', 'r')
return {recorded, tonumber(wd[1] or 0), tonumber(wd[2] or 0)}
`,
);

/**
 * KEYS: pending entry, pending index. ARGV: key base, key. An entry whose open wrote no counter
 * (`z` 1) is dropped without reading its JSON or its counters (every in-window read ends here).
 */
export const RELEASE_CHARGE: LuaScript = lua(
  'releaseCharge',
  `${SETTLE_FN}${COUNTERS_FN}
if redis.call('HGET', KEYS[1], 'z') ~= '1' then
  for _, name in ipairs(pending_counters(KEYS[1])) do settle_named(ARGV[1], name, ARGV[2], '', 1) end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
`,
);

/** KEYS: pending index. ARGV: key base, limit. Returns {key, j, o, l, n, u, ...}, oldest first. */
export const PENDING_CHARGES: LuaScript = lua(
  'pendingCharges',
  `
local out = {}
local keys = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
for _, key in ipairs(keys) do
  local e = redis.call('HMGET', ARGV[1] .. 'p:' .. key, 'j', 'o', 'l', 'n', 'u')
  if e[1] then
    out[#out + 1] = key
    for i = 1, 4 do out[#out + 1] = e[i] end
    out[#out + 1] = e[5] or ''
  else
    redis.call('ZREM', KEYS[1], key)
  end
end
return out
`,
);

/** KEYS: window, window index. ARGV: inn, kind, until, now. Returns {dossierUntil, requisitesUntil}. */
export const OPEN_WINDOW: LuaScript = lua(
  'openWindow',
  `${WINDOW_FN}
merge_window(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
local wd = redis.call('HMGET', KEYS[1], 'd', 'r')
return {tonumber(wd[1] or 0), tonumber(wd[2] or 0)}
`,
);

/** KEYS: window index. ARGV: key base, now, limit. Returns {inn, d, r, ...}. */
export const LIST_WINDOWS: LuaScript = lua(
  'listWindows',
  `
local out = {}
local inns = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '+inf', 'LIMIT', 0, tonumber(ARGV[3]))
for _, inn in ipairs(inns) do
  local wd = redis.call('HMGET', ARGV[1] .. 'w:' .. inn, 'd', 'r')
  if wd[1] then
    out[#out + 1] = inn
    out[#out + 1] = tonumber(wd[1])
    out[#out + 1] = tonumber(wd[2])
  end
end
return out
`,
);
