// Sections served from the cached dossier (issue #14), against the emulator: a paid section
// read brings the dossier in inside its window (free); equivalence is learned from reads inside
// windows; after the window a learned section of a cached dossier is answered with X-Cache:
// DERIVED, no charge and no upstream call; a section whose endpoint answer differs from the
// dossier's member (the emulator's section_differs mode) is turned off and never derived.
// The emulator's ledger and request log are the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

const MINUTE = 60_000;

const charges = async (inn: string) => (await h.ledger()).entries.filter((e) => e.inn === inn);
const upstreamReads = async (inn: string) => {
  const snap = (await h.emu('/requests')) as { requests: Array<{ path?: string; url?: string }> };
  return snap.requests.filter((r) => (r.path ?? r.url ?? '').includes(inn)).length;
};
const adminStats = async () => {
  const res = await fetch(`${h.gateway.url}/admin/cache/stats`, {
    headers: { authorization: `Bearer ${h.adminToken}` },
  });
  return (await res.json()) as {
    sections_from_dossier: {
      derived: number;
      derived_saved_minor: number;
      prefetches: { fetched: number };
      sections: Record<string, { verdict: string; equal: number; differs: number; reason?: string }>;
    };
  };
};
async function until(what: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await what()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('condition not reached');
}
const prefetched = async (n: number) => (await adminStats()).sections_from_dossier.prefetches.fetched >= n;

describe('sections from the cached dossier', () => {
  it('a paid section read brings the dossier in within its window, free, and teaches the section', async () => {
    const [inn] = knownInns(1, 900);
    const before = (await adminStats()).sections_from_dossier.prefetches.fetched;
    const r = await h.call('alpha', `/v1/companies/${inn}/founders`);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-charged-minor')).toBe('9900');
    await until(() => prefetched(before + 1));
    // One charge: the section read. The dossier read by the gateway was inside that window.
    expect((await charges(inn!)).map((c) => c.amount_minor)).toEqual([9900]);
    expect(await upstreamReads(inn!)).toBe(2);
    // The app's dossier read is now a cache hit, no upstream call.
    const d = await h.call('beta', `/v1/companies/${inn}`);
    expect(d.headers.get('x-cache')).toBe('HIT');
    expect(await upstreamReads(inn!)).toBe(2);
    const founders = (await adminStats()).sections_from_dossier.sections.founders!;
    expect(founders.verdict).toBe('equivalent');
    expect(founders.equal).toBeGreaterThanOrEqual(1);
  });

  it('after its window, learned sections of a cached dossier are served DERIVED: no charge, no upstream call', async () => {
    // Learn a few sections inside one window: a paid read, the prefetch, free reads in the window.
    const [teach, inn] = knownInns(2, 1000);
    const before = (await adminStats()).sections_from_dossier.prefetches.fetched;
    await h.call('alpha', `/v1/companies/${teach}/management`);
    await until(() => prefetched(before + 1));
    for (const s of ['financials', 'taxes', 'arbitration'])
      expect((await h.call('alpha', `/v1/companies/${teach}/${s}`)).headers.get('x-charged-minor')).toBe('0');
    const learned = (await adminStats()).sections_from_dossier.sections;
    for (const s of ['management', 'financials', 'taxes', 'arbitration'])
      expect(learned[s]!.verdict).toBe('equivalent');

    // Another company's dossier, read and cached; its window then closes.
    const dossier = await h.call('beta', `/v1/companies/${inn}`);
    expect(dossier.headers.get('x-charged-minor')).toBe('9900');
    const body = (await dossier.json()) as Record<string, unknown>;
    h.advance(20 * MINUTE);
    const ledgerBefore = (await h.ledger()).totals;
    const readsBefore = await upstreamReads(inn!);
    const savedBefore = (await adminStats()).sections_from_dossier.derived_saved_minor;
    for (const s of ['management', 'financials', 'taxes', 'arbitration']) {
      const r = await h.call('gamma', `/v1/companies/${inn}/${s}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-cache')).toBe('DERIVED');
      expect(r.headers.get('x-charged-minor')).toBe('0');
      expect(Number(r.headers.get('age'))).toBeGreaterThanOrEqual(20 * 60);
      expect(await r.json()).toEqual(body[s]);
    }
    expect((await h.ledger()).totals).toEqual(ledgerBefore);
    expect(await upstreamReads(inn!)).toBe(readsBefore);
    // A section never compared is not derived: charged, and its paid read brings nothing new
    // (the dossier is cached already, so no prefetch).
    const licenses = await h.call('gamma', `/v1/companies/${inn}/licenses`);
    expect(licenses.headers.get('x-cache')).toBe('MISS');
    expect(licenses.headers.get('x-charged-minor')).toBe('9900');

    const stats = (await adminStats()).sections_from_dossier;
    expect(stats.derived).toBeGreaterThanOrEqual(4);
    expect(stats.derived_saved_minor - savedBefore).toBe(4 * 9900);
    const metrics = await (
      await fetch(`${h.gateway.url}/metrics`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).text();
    const line = metrics
      .split('\n')
      .find(
        (l) =>
          l.startsWith('cpgw_saved_minor_total{') &&
          l.includes('app="gamma"') &&
          l.includes('reason="derived"'),
      );
    expect(Number(line?.split(' ').pop())).toBeGreaterThanOrEqual(4 * 9900);
  });

  it('a section whose endpoint answer differs from the dossier member is turned off for that section only', async () => {
    await h.emu('/modes', { section_differs: 'branches' });
    try {
      const [teach, inn] = knownInns(2, 1100);
      const before = (await adminStats()).sections_from_dossier.prefetches.fetched;
      await h.call('alpha', `/v1/companies/${teach}/branches`);
      await until(() => prefetched(before + 1));
      await h.call('alpha', `/v1/companies/${teach}/activities`);
      const verdicts = (await adminStats()).sections_from_dossier.sections;
      expect(verdicts.branches!.verdict).toBe('different');
      expect(verdicts.branches!.reason).toMatch(/differ/);
      expect(verdicts.activities!.verdict).toBe('equivalent');
      expect(h.logs.some((l) => l.includes('no longer derived') && l.includes('branches'))).toBe(true);

      await h.call('beta', `/v1/companies/${inn}`);
      h.advance(20 * MINUTE);
      const branches = await h.call('gamma', `/v1/companies/${inn}/branches`);
      expect(branches.headers.get('x-cache')).toBe('MISS');
      expect(branches.headers.get('x-charged-minor')).toBe('9900');
      // What the app got is the endpoint's own (differing) answer, never the dossier's member.
      expect(await branches.json()).toHaveProperty('detail_level', 'full');
      const activities = await h.call('gamma', `/v1/companies/${inn}/activities`);
      expect(activities.headers.get('x-charged-minor')).toBe('0');
      // Inside the window the branches read just opened, activities is free upstream: not derived.
      expect(activities.headers.get('x-cache')).toBe('MISS');
      h.advance(20 * MINUTE);
      const [other] = knownInns(1, 1200);
      await h.call('beta', `/v1/companies/${other}`);
      h.advance(20 * MINUTE);
      expect((await h.call('gamma', `/v1/companies/${other}/activities`)).headers.get('x-cache')).toBe(
        'DERIVED',
      );
      const b2 = await h.call('gamma', `/v1/companies/${other}/branches`);
      expect(b2.headers.get('x-cache')).toBe('MISS');
      expect(b2.headers.get('x-charged-minor')).toBe('9900');
    } finally {
      await h.emu('/modes', { section_differs: '' });
    }
  });
});
