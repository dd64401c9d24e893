// Idempotency-Key records per account: the first answer to a key is replayed to every
// later identical request; a different request with the key is refused; a key still
// executing is 409. Keys live one day on the emulator clock. An error answer is either
// released (the key may run again) or stored and replayed like any answer, as the caller
// decides (the `replayErrors` mode). It never charges anything.
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredAnswer {
  status: number;
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** What a key remembers: an answer, or a refusal (re-rendered with the replay's own request id). */
export type Stored = StoredAnswer | ApiError;

type Entry =
  | { state: 'running'; fingerprint: string; createdAt: number }
  | { state: 'done'; fingerprint: string; createdAt: number; answer: Stored };

export type Begin =
  | { kind: 'new'; finish: (answer: Stored | null) => void }
  | { kind: 'replay'; answer: Stored };

export class IdempotencyStore {
  private entries = new Map<string, Entry>();

  constructor(private readonly clock: Clock) {}

  /**
   * Starts a request under `key`. `finish(answer)` stores the answer for replay, or with
   * null releases the key (an error answer: the client may retry with the same key).
   */
  begin(accountId: number, key: string, fingerprint: string): Begin {
    const id = `${accountId}\u0000${key}`;
    const now = this.clock.now();
    const existing = this.entries.get(id);
    if (existing && existing.createdAt + IDEMPOTENCY_TTL_MS > now) {
      if (existing.fingerprint !== fingerprint) throw new ApiError('idempotency_key_reused');
      if (existing.state === 'running') throw new ApiError('idempotency_in_progress');
      return { kind: 'replay', answer: existing.answer };
    }
    this.sweep(now);
    const entry: Entry = { state: 'running', fingerprint, createdAt: now };
    // Deleted first: a Map keeps a replaced key's place, and sweep() needs the oldest first.
    this.entries.delete(id);
    this.entries.set(id, entry);
    return {
      kind: 'new',
      finish: (answer) => {
        if (this.entries.get(id) !== entry) return;
        if (answer === null) this.entries.delete(id);
        else this.entries.set(id, { state: 'done', fingerprint, createdAt: entry.createdAt, answer });
      },
    };
  }

  get size(): number {
    return this.entries.size;
  }

  reset(): void {
    this.entries.clear();
  }

  /**
   * Drops expired answers, oldest first, up to the first key still live: entries are in the
   * order they began (begin() re-inserts a key it starts again), so the rest are live too. It
   * walked every key on every new one before, ~20 µs a request at 3,000 keys and growing, which
   * benches that send a key on every call (the gateway does) counted as the gateway's time.
   */
  private sweep(now: number): void {
    if (this.entries.size < 1024) return;
    for (const [id, entry] of this.entries) {
      if (entry.createdAt + IDEMPOTENCY_TTL_MS > now) break;
      if (entry.state === 'done') this.entries.delete(id);
    }
  }
}

/** Method, path, sorted query and canonical JSON body: what "the same request" means. */
export function requestFingerprint(
  method: string,
  path: string,
  query: URLSearchParams,
  body: unknown,
): string {
  const pairs = [...query.entries()].sort(([a, av], [b, bv]) =>
    a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1,
  );
  return `${method} ${path}?${new URLSearchParams(pairs).toString()}\n${canonicalJson(body)}`;
}

function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
}
