// How the Redis store names its keys. One rule, so Redis Cluster works: every key touched by one
// atomic step (a Lua script) shares a hash tag, and per-company keys share the company's slot.
//
//   kind    Redis key                                   example (prefix "cpgw:")
//   state   <prefix>s:[{<inn>}:]<logical>               cpgw:s:{7707083893}:window:7707083893
//                                                       cpgw:s:lock:coalesce:ab12        (no INN)
//   cache   <prefix>c:[{<inn>}:]<logical>               cpgw:c:{7707083893}:dossier:7707083893
//   tag set <prefix>t:[{<inn>}:]<tag>                   cpgw:t:{7707083893}:inn:7707083893
//   cache accounting   <prefix>{cache}:sizes|expiry|bytes   (one slot: bytes tracked atomically)
//   blob    <prefix>b:[{<inn>}:]<logical>               (state role's binary values; not cache)
//   index   <prefix>si:<listed prefix>                  cpgw:si:webhook:out:  (zset: the state
//           keys under a prefix listed every second, logical key -> expiry; redis-state.ts)
//   money   <prefix>{money}:...  every key of the budget, ledger and money roles, one slot:
//           {money}:c:<counter> (hash: spent, held, h:<reservation id>)
//           {money}:h:<counter> (zset: reservation id -> hold expiry, server ms)
//           {money}:ledger      (stream; ids <at ms>-<seq>)
//           {money}:claim:<key> (charge recorded under this idempotency key; 1 day)
//           {money}:p:<key>     (pending charge: j = JSON, o = owner, l = leaseUntil, n = attempts)
//           {money}:pending     (zset: key -> at, oldest first)
//           {money}:w:<inn>     (coverage windows: d, r = until ms)
//           {money}:windows     (zset: inn -> when its last window ends)
//   limiter <prefix>{limits}:w:<class>   (zset: slot id -> taken at, server ms)
//           <prefix>{limits}:p:<class>   (pause marker, PX = pause length)
//   pub/sub <prefix>ch:<channel>
//
// The INN tag: the first `:`-separated segment of the logical key that is 10 or 12 digits. Keys
// without one carry no tag (Redis hashes the whole key). Logical keys keep their full text after
// the tag, so keys(prefix) can list them back. A prefix must not itself contain `{`.
//
// Must never: produce two different Redis keys for one logical key, or spread one script's keys
// over different tags.

const INN_SEGMENT = /^(\d{10}|\d{12})$/;

export function innTag(logical: string): string | null {
  for (const segment of logical.split(':')) if (INN_SEGMENT.test(segment)) return segment;
  return null;
}

export class RedisKeys {
  constructor(readonly prefix: string) {
    if (prefix.includes('{')) throw new RangeError('Redis key prefix must not contain "{"');
  }

  state(logical: string): string {
    return this.tagged('s:', logical);
  }

  cache(logical: string): string {
    return this.tagged('c:', logical);
  }

  cacheTag(tag: string): string {
    return this.tagged('t:', tag);
  }

  get cacheSizes(): string {
    return `${this.prefix}{cache}:sizes`;
  }
  get cacheExpiry(): string {
    return `${this.prefix}{cache}:expiry`;
  }
  get cacheBytes(): string {
    return `${this.prefix}{cache}:bytes`;
  }

  blob(logical: string): string {
    return this.tagged('b:', logical);
  }

  /** The index of the state keys under a listed logical prefix (state-store.ts LISTED_PREFIXES). */
  stateIndex(logicalPrefix: string): string {
    return `${this.prefix}si:${logicalPrefix}`;
  }

  /** Base of every `{money}` key; the money scripts derive counter keys from it. */
  get money(): string {
    return `${this.prefix}{money}:`;
  }
  budgetCounter(counter: string): string {
    return `${this.money}c:${counter}`;
  }
  budgetHolds(counter: string): string {
    return `${this.money}h:${counter}`;
  }
  claim(key: string): string {
    return `${this.money}claim:${key}`;
  }
  pendingEntry(key: string): string {
    return `${this.money}p:${key}`;
  }
  get pendingIndex(): string {
    return `${this.money}pending`;
  }
  windows(inn: string): string {
    return `${this.money}w:${inn}`;
  }
  get windowIndex(): string {
    return `${this.money}windows`;
  }

  slots(className: string): string {
    return `${this.prefix}{limits}:w:${className}`;
  }
  pause(className: string): string {
    return `${this.prefix}{limits}:p:${className}`;
  }

  get ledger(): string {
    return `${this.money}ledger`;
  }

  channel(name: string): string {
    return `${this.prefix}ch:${name}`;
  }

  /** SCAN patterns that find state keys whose logical name starts with `logicalPrefix`. */
  statePatterns(logicalPrefix: string): string[] {
    const p = globEscape(logicalPrefix);
    return [`${globEscape(this.prefix)}s:${p}*`, `${globEscape(this.prefix)}s:{*}:${p}*`];
  }

  /** The logical name of a state key, or null when `redisKey` is not one. */
  logicalState(redisKey: string): string | null {
    return this.logicalOf('s:', redisKey);
  }

  /** The logical name of a cache entry key, or null when `redisKey` is not one. */
  logicalCache(redisKey: string): string | null {
    return this.logicalOf('c:', redisKey);
  }

  private logicalOf(kind: string, redisKey: string): string | null {
    const head = `${this.prefix}${kind}`;
    if (!redisKey.startsWith(head)) return null;
    const rest = redisKey.slice(head.length);
    if (!rest.startsWith('{')) return rest;
    const close = rest.indexOf('}:');
    if (close < 0) return null;
    const logical = rest.slice(close + 2);
    // Only a tag this store would have written (the logical key's own INN) counts.
    return innTag(logical) === rest.slice(1, close) ? logical : null;
  }

  private tagged(kind: string, logical: string): string {
    const tag = innTag(logical);
    return tag ? `${this.prefix}${kind}{${tag}}:${logical}` : `${this.prefix}${kind}${logical}`;
  }
}

/** Escapes Redis glob specials so a prefix matches literally. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
