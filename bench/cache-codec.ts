// Cache codec benchmark: stored size and speed of gzip and brotli levels for real emulator
// dossiers (~100 KB) and a bank record, plus encode/decode/render throughput of whole entries.
// Run: node bin/run-ts.js bench/cache-codec.ts   (writes bench/results/cache-codec.json)
//
// "Fits 16 KiB" says whether the encoded entry (plus its Redis key) fits jemalloc's 16 KiB size
// class: the next class is 20 KiB, so an entry just over 16 KiB costs Redis ~20.5 KB
// (MEMORY USAGE), over the 20 KB target, however small STRLEN looks.
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { resolveCacheConfig } from '../src/cache/cache-config.ts';
import { type CacheEntry, decodeEntry, encodeEntry } from '../src/cache/cache-entry.ts';
import { brotliOptions } from '../src/cache/content-coding.ts';
import { ResponseCache } from '../src/cache/response-cache.ts';
import { ManualClock } from '../src/clock.ts';
import { createEmulatorData } from '../src/emulator/data/index.ts';
import { MemoryStore } from '../src/store/memory/memory-store.ts';

type Codec = { name: string; encoding: 'gzip' | 'br'; level: number };

const CODECS: Codec[] = [
  { name: 'gzip-1', encoding: 'gzip', level: 1 },
  { name: 'gzip-6', encoding: 'gzip', level: 6 },
  { name: 'gzip-9', encoding: 'gzip', level: 9 },
  { name: 'br-4', encoding: 'br', level: 4 },
  { name: 'br-5', encoding: 'br', level: 5 },
  { name: 'br-6', encoding: 'br', level: 6 },
  { name: 'br-9', encoding: 'br', level: 9 },
  { name: 'br-11', encoding: 'br', level: 11 },
];

const JEMALLOC_16K = 16_384;
const KEY_BYTES = 40; // "cpgw:c:{7707083893}:company:7707083893"

function compress(codec: Codec, body: Buffer): Buffer {
  return codec.encoding === 'gzip'
    ? gzipSync(body, { level: codec.level })
    : brotliCompressSync(body, brotliOptions(codec.level, body.length));
}

function decompress(codec: Codec, body: Buffer): Buffer {
  return codec.encoding === 'gzip' ? gunzipSync(body) : brotliDecompressSync(body);
}

/** Median ms per call over enough calls to fill ~targetMs (after a warm-up). */
function time(fn: () => unknown, targetMs = 300): { medianMs: number; opsPerSec: number; runs: number } {
  for (let i = 0; i < 3; i++) fn();
  const samples: number[] = [];
  const started = performance.now();
  while (performance.now() - started < targetMs || samples.length < 5) {
    const t = performance.now();
    fn();
    samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  const medianMs = samples[Math.floor(samples.length / 2)]!;
  return { medianMs: round(medianMs, 4), opsPerSec: Math.round(1000 / medianMs), runs: samples.length };
}

function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

const data = createEmulatorData();
const inns = ['7707083893', ...data.universeInns().legal.slice(0, 7)];
const dossiers = inns.map((inn) => ({ inn, body: Buffer.from(data.dossierJson(inn)!) }));
const bank = Buffer.from(JSON.stringify(data.bank('044525225')));

const sizeRows = [];
for (const codec of CODECS) {
  const sizes = dossiers.map((d) => compress(codec, d.body).length);
  const sample = dossiers[0]!.body;
  const packed = compress(codec, sample);
  const entryBytes = (n: number) => n + 24 + 110; // binary header + meta JSON
  const row = {
    codec: codec.name,
    dossierIdentityBytes: dossiers.map((d) => d.body.length),
    dossierStoredBytes: sizes,
    meanRatio: round(sizes.reduce((s, n, i) => s + n / dossiers[i]!.body.length, 0) / sizes.length, 4),
    maxEntryBytes: Math.max(...sizes.map(entryBytes)),
    allFit16KiB: sizes.every((n) => entryBytes(n) + KEY_BYTES + 16 <= JEMALLOC_16K),
    compress100KB: time(() => compress(codec, sample), codec.name === 'br-11' ? 2000 : 300),
    decompress100KB: time(() => decompress(codec, packed)),
    bankIdentityBytes: bank.length,
    bankStoredBytes: compress(codec, bank).length,
    compressBank: time(() => compress(codec, bank)),
  };
  sizeRows.push(row);
  console.log(
    `${codec.name.padEnd(7)} dossier ${row.dossierStoredBytes[0]} B (mean ratio ${row.meanRatio}, max entry ${row.maxEntryBytes} B, fits 16 KiB: ${row.allFit16KiB})  ` +
      `compress ${row.compress100KB.medianMs} ms  decompress ${row.decompress100KB.medianMs} ms  bank ${row.bankStoredBytes} B`,
  );
}

// Whole-entry paths with the configured default codec.
const config = resolveCacheConfig();
const clock = new ManualClock();
const cache = new ResponseCache({
  store: new MemoryStore({ clock, cacheMaxBytes: 64 * 1024 * 1024 }),
  clock,
  config,
});
const req = {
  route: 'company' as const,
  params: { inn: '7707083893' },
  query: {},
  app: 'bench',
  directives: { noCache: false, noStore: false, onlyIfCached: false },
};
const saved = (await cache.save(req, { status: 200, headers: {}, body: dossiers[0]!.body })) as CacheEntry;
const encoded = encodeEntry(saved);
const bankReq = { ...req, route: 'bank' as const, params: { bic: '044525225' } };
const bankEntry = (await cache.save(bankReq, { status: 200, headers: {}, body: bank })) as CacheEntry;
const entryRows = {
  codec: `${config.compression.encoding}-${config.compression.level}`,
  dossierEntryBytes: encoded.length,
  bankEntryBytes: encodeEntry(bankEntry).length,
  encodeDossierEntry: time(() => encodeEntry(saved)),
  decodeDossierEntry: time(() => decodeEntry(encoded)),
  renderPassthrough: time(() => cache.render(saved, 'gzip, br')),
  renderDecompressed: time(() => cache.render(saved, undefined)),
  renderBank: time(() => cache.render(bankEntry, undefined)),
};
console.log(entryRows);

const result = {
  at: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  dossiers: dossiers.length,
  codecs: sizeRows,
  entry: entryRows,
};
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/cache-codec.json', `${JSON.stringify(result, null, 2)}\n`);
console.log('wrote bench/results/cache-codec.json');
