// Benchmark: what a shallow copy with changes costs on the Node that runs it, in the forms the
// request path could use (src/object-copy.ts says why it uses Object.assign): a spread followed by
// more properties, a property added to a spread copy, Object.assign, a literal with a getter
// (limits/own-slots.ts's view was one) and a class with the getter on its prototype; objects of
// one shape, and of 16 shapes in turn (as the pipeline's answers come). Run it under each Node
// the gateway supports (machines: 20; the image: 24):
//   node bin/run-ts.js bench/object-copy.ts     (writes bench/results/object-copy-node<major>.json)
import { mkdirSync, writeFileSync } from 'node:fs';
import { copyOf, copyWith } from '../src/object-copy.ts';

const SHAPES = 16;
const objects = Array.from({ length: SHAPES }, (_, i) => {
  const o: Record<string, unknown> = {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: null,
  };
  if (i & 1) o.cache = 'MISS';
  if (i & 2) o.chargedMinor = 0;
  if (i & 4) o.windowExpires = '2026-11-29T00:00:00.000Z';
  if (i & 8) o.queuedMs = 0;
  return o as { status: number };
});

class View {
  private list: number[] | null = null;
  constructor(
    readonly status: number,
    readonly limit: number,
  ) {}
  get expiries(): number[] {
    this.list ??= [this.limit];
    return this.list;
  }
}

const FORMS: Record<string, (o: { status: number }) => { status: number }> = {
  '{ ...o, k: v }': (o) => ({ ...o, k: 1 }),
  'c = { ...o }; c.k = v': (o) => {
    const c: Record<string, unknown> & { status: number } = { ...o };
    c.k = 1;
    return c;
  },
  'copyWith(o, { k: v })': (o) => copyWith(o, { k: 1 }),
  'c = copyOf(o); c.k = v': (o) => {
    const c = copyOf(o) as Record<string, unknown> & { status: number };
    c.k = 1;
    return c;
  },
  'literal with a getter': (o) => {
    let list: number[] | null = null;
    return {
      status: o.status,
      limit: 1,
      get expiries() {
        list ??= [1];
        return list;
      },
    };
  },
  'class, getter on the prototype': (o) => new View(o.status, 1),
};

const N = 1_000_000;
const rounds = 3;
const results: Record<string, { oneShape: number; shapes16: number }> = {};
console.log(`Node ${process.version}: ns per copy (median of ${rounds} rounds of ${N.toLocaleString('en')})`);
console.log(`  ${'form'.padEnd(32)} ${'1 shape'.padStart(8)} ${'16 shapes'.padStart(10)}`);
/** One copy site per measurement (a fresh function), so one form's feedback does not feed the next. */
function measure(make: (o: { status: number }) => { status: number }, shapes: number): number {
  const site = new Function('make', 'return (o) => make(o)')(make) as typeof make;
  let sink = 0;
  for (let i = 0; i < 100_000; i++) sink += site(objects[i % shapes]!).status;
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) sink += site(objects[i % shapes]!).status;
    times.push(((performance.now() - t0) * 1e6) / N);
  }
  times.sort((a, b) => a - b);
  if (sink === 0) console.log('');
  return Math.round(times[1]!);
}
for (const [name, make] of Object.entries(FORMS)) {
  results[name] = { oneShape: measure(make, 1), shapes16: measure(make, SHAPES) };
  console.log(
    `  ${name.padEnd(32)} ${String(results[name].oneShape).padStart(8)} ${String(results[name].shapes16).padStart(10)}`,
  );
}
const major = process.versions.node.split('.')[0];
mkdirSync('bench/results', { recursive: true });
const file = `bench/results/object-copy-node${major}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ node: process.version, at: new Date().toISOString(), nsPerCopy: results }, null, 2)}\n`,
);
console.log(`written ${file}`);
