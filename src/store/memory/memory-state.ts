// The memory store's state role: plain Maps that cache pressure can never evict (state keys,
// locks, blobs), all time from the injected clock.
//
// Must never: call Date.now(), evict state before its TTL, or list blobs among state keys.
import type { Clock } from '../../clock.ts';
import type { StateStore } from '../state-store.ts';
import { DEFAULT_KEYS_LIMIT, ttlOf } from '../store-util.ts';
import type { WriteCounter } from './write-counter.ts';

interface Entry<T> {
  value: T;
  expiresAt: number;
}

export class MemoryState implements StateStore {
  private readonly state = new Map<string, Entry<string>>();
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
  }

  /** Live state keys (tests: memory stays bounded). */
  get size(): number {
    return this.state.size;
  }

  private put(key: string, value: string, ttl: number): void {
    this.state.set(key, { value, expiresAt: this.clock.now() + ttl });
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
