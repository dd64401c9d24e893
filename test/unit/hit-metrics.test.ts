// The hit path's batched metrics (GatewayMetrics.hit + flushHits, addBucketed): what a scrape
// shows after N HITs equals what prom-client shows when the same values are observed one by one.
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { addBucketed, GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const VALUES = [0.00001, 0.0004, 0.001, 0.0011, 0.003, 0.02, 0.7, 12, 45, 0.0099, 0.001];

function bucketsOf(values: number[]): number[] {
  const out = new Array<number>(BOUNDS.length + 1).fill(0);
  for (const v of values) {
    let b = 0;
    while (b < BOUNDS.length && v > BOUNDS[b]!) b++;
    out[b]!++;
  }
  return out;
}

function histogram(registry: Registry): Histogram<string> {
  return new Histogram({
    name: 'h_seconds',
    help: 'h',
    labelNames: ['route', 'cache'],
    buckets: BOUNDS,
    registers: [registry],
  });
}

describe('addBucketed', () => {
  it('gives the same exposition as observe() on the same values, onto an existing series and a new one', async () => {
    const one = new Registry();
    const byObserve = histogram(one);
    const other = new Registry();
    const bulk = histogram(other);
    const labels = { route: 'bank', cache: 'HIT' };
    // An existing series (the full pipeline observed before) and a series the bulk add creates.
    byObserve.observe(labels, 0.002);
    bulk.observe(labels, 0.002);
    for (const v of VALUES) byObserve.observe(labels, v);
    for (const v of VALUES) byObserve.observe({ route: 'suggest', cache: 'HIT' }, v);
    const sum = VALUES.reduce((a, b) => a + b, 0);
    addBucketed(bulk, labels, bucketsOf(VALUES), sum, VALUES.length);
    addBucketed(bulk, { route: 'suggest', cache: 'HIT' }, bucketsOf(VALUES), sum, VALUES.length);
    expect(await other.metrics()).toBe(await one.metrics());
  });
});

describe('GatewayMetrics.hit', () => {
  it('shows every HIT on the next scrape, and again after more', async () => {
    const m = new GatewayMetrics({ apps: ['crm'], price: () => 4000, defaultMetrics: false });
    const ref = new GatewayMetrics({ apps: ['crm'], price: () => 4000, defaultMetrics: false });
    const scrape = async (g: GatewayMetrics) =>
      (await g.render())
        .split('\n')
        .filter(
          (l) =>
            (/^cpgw_(requests_total|request_duration_seconds|saved_minor_total)\b/.test(l) &&
              l.includes('HIT')) ||
            l.includes('reason="cache"'),
        )
        .join('\n');
    for (const v of VALUES) {
      m.hit('crm', 'company_dossier', 'dossier', 4000, v);
      ref.request({ app: 'crm', route: 'company_dossier', status: 200, cache: 'HIT', seconds: v });
      ref.m.saved.inc({ app: 'crm', kind: 'dossier', reason: 'cache' }, 4000);
    }
    const first = await scrape(m);
    expect(first).toContain(`status="200",cache="HIT"} ${VALUES.length}`);
    expect(first).toBe(await scrape(ref));
    m.hit('crm', 'company_dossier', 'dossier', 0, 0.0002);
    ref.request({ app: 'crm', route: 'company_dossier', status: 200, cache: 'HIT', seconds: 0.0002 });
    expect(await scrape(m)).toBe(await scrape(ref));
  });
});
