// Measurement behind MemoryCache's ENTRY_OVERHEAD_BYTES / TAG_OVERHEAD_BYTES (issue 31 "memory
// that stays inside its limit"): what one cached entry costs in the heap beyond its body and key
// bytes. N small negative-answer entries (the shape a 404 for an unknown INN is stored in) go into
// a MemoryCache with no effective bound; heapUsed + arrayBuffers after a full GC, before and
// after, divided by N, minus the body and key bytes. Cases: no tags; the two tags the response
// cache gives (inn:<INN>, route:<route>); those plus the decoded CacheEntry the response cache
// keeps beside each stored Buffer (a WeakMap, alive as long as the entry) and the prepared HIT
// answer the hit path keeps beside it (head array, per-coding Map). Not counted: the malloc
// header of each entry's own allocation (a few dozen bytes), covered by the rounding up.
//   node --expose-gc bin/run-ts.js bench/cache-entry-overhead.ts [N]
// Must never: run without --expose-gc (the figures would be garbage, literally).
import { decodeEntry, encodeEntry } from '../src/cache/cache-entry.ts';
import { systemClock } from '../src/clock.ts';
import { MemoryCache } from '../src/store/memory/memory-cache.ts';

const N = Number(process.argv[2] ?? 50_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function heap(): number {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

type Mode = 'no tags' | 'two tags' | 'two tags + decoded + prepared';

async function measure(mode: Mode): Promise<{ mode: Mode; bodyAndKey: number; overhead: number }> {
  const cache = new MemoryCache(systemClock, 2 ** 40);
  const keep: unknown[] = [];
  const before = heap();
  let counted = 0;
  for (let i = 0; i < N; i++) {
    const inn = String(7_700_000_000 + i);
    const bytes = encodeEntry({
      status: 404,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-upstream-request-id': `req-${i.toString(16).padStart(12, '0')}`,
      },
      body: Buffer.from(`{"error":{"code":"not_found","message":"company ${inn} not found"}}`),
      encoding: 'identity',
      identityLength: 64,
      storedAt: Date.now(),
      inn,
      route: 'company',
      kind: 'negative',
    });
    const key = `company:${inn}`;
    counted += bytes.length + Buffer.byteLength(key);
    const tags = mode === 'no tags' ? [] : [`inn:${inn}`, 'route:company'];
    await cache.cacheSet(key, bytes, { ttlMs: 3_600_000, tags });
    if (mode === 'two tags + decoded + prepared') {
      const entry = decodeEntry(bytes)!;
      const head: string[] = [];
      for (const name in entry.headers) head.push(name, entry.headers[name]!);
      head.push('x-cache', 'HIT', 'content-length', String(entry.body.length));
      keep.push(entry, new Map([['', { status: entry.status, head, body: entry.body }]]));
    }
  }
  const grown = heap() - before;
  if ((await cache.cacheBytes()) <= 0 || (keep.length > 0 && !keep[0])) throw new Error('nothing kept');
  return {
    mode,
    bodyAndKey: Math.round(counted / N),
    overhead: Math.round((grown - counted) / N),
  };
}

for (const mode of ['no tags', 'two tags', 'two tags + decoded + prepared'] as const) {
  const r = await measure(mode);
  console.log(
    `${r.mode}: body+key ${r.bodyAndKey} B, overhead ${r.overhead} B per entry (N=${N}, ${process.version})`,
  );
}
