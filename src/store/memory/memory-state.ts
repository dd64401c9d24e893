// The memory store's state role: plain Maps that cache pressure can never evict (state keys,
// locks, blobs), all time from the injected clock.
//
// Must never: call Date.now(), evict state before its TTL, or list blobs among state keys.
import type { Clock } from '../../clock.ts';
import { listedPrefixOf, type StateStore } from '../state-store.ts';
import { DEFAULT_KEYS_LIMIT, ttlOf } from '../store-util.ts';
import type { WriteCounter } from './write-counter.ts';

interface Entry<T> {
  value: T;
  expiresAt: number;
}

export class MemoryState implements StateStore {
  private readonly state = new Map<string, Entry<string>>();
  /**
   * The keys under each listed prefix (state-store.ts LISTED_PREFIXES), so the workers' listings
   * every second do not walk every state key (1.8 ms at 260k keys). A key that left `state`
   * without leaving its set is dropped from it by the next listing.
   */
  private readonly listed = new Map<string, Set<string>>();
  private readonly blobs = new Map<string, Entry<Buffer>>();

  constructor(
    private readonly clock: Clock,
    private readonly writes: WriteCounter,
  ) {}

  async get(key: string): Promise<string | null> {
    return live(this.state, key, this.clock.now())?.value ?? null;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.put(key, value, ttlOf(ttlMs));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    const ttl = ttlOf(ttlMs);
    if (live(this.state, key, this.clock.now())) return false;
    this.put(key, value, ttl);
    return true;
  }

  async keys(prefix: string, limit = DEFAULT_KEYS_LIMIT): Promise<string[]> {
    const now = this.clock.now();
    const found: string[] = [];
    const group = listedPrefixOf(prefix);
    if (group !== undefined) {
      const keys = this.listed.get(group);
      for (const key of keys ?? []) {
        if (found.length >= limit) break;
        const entry = this.state.get(key);
        if (!entry || entry.expiresAt <= now) {
          keys!.delete(key);
          if (entry) this.state.delete(key);
        } else if (key.startsWith(prefix)) found.push(key);
      }
      return found;
    }
    for (const [key, entry] of this.state) {
      if (found.length >= limit) break;
      if (key.startsWith(prefix) && entry.expiresAt > now) found.push(key);
    }
    return found;
  }

  // --- locks: plain state keys whose value is the owner ---

  async acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.setIfAbsent(key, owner, ttlMs);
  }

  async releaseLock(key: string, owner: string): Promise<boolean> {
    if (live(this.state, key, this.clock.now())?.value !== owner) return false;
    this.state.delete(key);
    return true;
  }

  async renewLock(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const ttl = ttlOf(ttlMs);
    const entry = live(this.state, key, this.clock.now());
    if (entry?.value !== owner) return false;
    entry.expiresAt = this.clock.now() + ttl;
    return true;
  }

  // --- blobs ---

  async putBlob(key: string, value: Buffer, ttlMs: number): Promise<void> {
    const ttl = ttlOf(ttlMs);
    this.blobs.set(key, { value, expiresAt: this.clock.now() + ttl });
    this.writes.wrote();
  }

  async getBlob(key: string): Promise<Buffer | null> {
    return live(this.blobs, key, this.clock.now())?.value ?? null;
  }

  sweep(): void {
    const now = this.clock.now();
    for (const map of [this.state, this.blobs] as Map<string, Entry<unknown>>[]) {
      for (const [key, entry] of map) if (entry.expiresAt <= now) map.delete(key);
    }
    // Keys gone from `state` (expired, read after expiry, released) leave the listed sets too.
    for (const keys of this.listed.values())
      for (const key of keys) if (!this.state.has(key)) keys.delete(key);
  }

  /** Keys held by the listed-prefix index (tests: it forgets what `state` dropped). */
  get listedSize(): number {
    let n = 0;
    for (const keys of this.listed.values()) n += keys.size;
    return n;
  }

  /** Live state keys (tests: memory stays bounded). */
  get size(): number {
    return this.state.size;
  }

  private put(key: string, value: string, ttl: number): void {
    this.state.set(key, { value, expiresAt: this.clock.now() + ttl });
    const group = listedPrefixOf(key);
    if (group !== undefined) {
      let keys = this.listed.get(group);
      if (!keys) {
        keys = new Set();
        this.listed.set(group, keys);
      }
      keys.add(key);
    }
    this.writes.wrote();
  }
}

function live<T>(map: Map<string, Entry<T>>, key: string, now: number): Entry<T> | undefined {
  const entry = map.get(key);
  if (entry && entry.expiresAt <= now) {
    map.delete(key);
    return undefined;
  }
  return entry;
}
