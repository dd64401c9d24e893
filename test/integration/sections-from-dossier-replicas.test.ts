// Sections from the cached dossier (issue #14) beyond the one-gateway tests in
// sections-from-dossier.test.ts:
//   - the reverse evidence: with the prefetch off, sections read first and the dossier read
//     later inside the same window are compared when the dossier comes (an equal section is
//     then derived after the window; a differing one, the emulator's section_differs, never);
//   - two replicas on one Redis: what one replica learns (equal or different) is what the
//     other derives or refuses to derive, from the dossier the first one brought in.
// The emulator's ledger and request log are the truth.
import { afterAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

const MINUTE = 60_000;

type Verdicts = Record<string, { verdict: string; equal: number; differs: number }>;
async function verdicts(url: string, adminToken: string): Promise<Verdicts> {
  const res = await fetch(`${url}/admin/cache/stats`, { headers: { authorization: `Bearer ${adminToken}` } });
  return ((await res.json()) as { sections_from_dossier: { sections: Verdicts } }).sections_from_dossier
    .sections;
}
const read = (url: string, token: string, path: string) =>
  fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
const charged = (r: Response) => r.headers.get('x-charged-minor');

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closers) await close();
});

describe('sections from the cached dossier: dossier-second evidence and replicas', () => {
  it('sections read before the dossier in one window are compared when the dossier comes; a differing one is never derived', async () => {
    const h: Harness = await startHarness({ config: { cache: { prefetchDossier: false } } });
    closers.push(() => h.close());
    await h.emu('/modes', { section_differs: 'branches' });
    const [teach, inn] = knownInns(2, 41_000);
    // Two sections first: the first opens the window (paid), the second is free inside it.
    expect(charged(await h.call('alpha', `/v1/companies/${teach}/branches`))).toBe('9900');
    expect(charged(await h.call('alpha', `/v1/companies/${teach}/taxes`))).toBe('0');
    // No dossier yet (no prefetch): nothing compared.
    expect((await verdicts(h.gateway.url, h.adminToken)).taxes).toMatchObject({
      verdict: 'learning',
      equal: 0,
    });
    expect(charged(await h.call('beta', `/v1/companies/${teach}`))).toBe('0');
    const learned = await verdicts(h.gateway.url, h.adminToken);
    expect(learned.taxes!.verdict).toBe('equivalent');
    expect(learned.branches!.verdict).toBe('different');
    expect(learned.branches!.differs).toBe(1);

    await h.call('beta', `/v1/companies/${inn}`);
    h.advance(20 * MINUTE);
    const before = (await h.ledger()).totals.amount_minor;
    const taxes = await h.call('gamma', `/v1/companies/${inn}/taxes`);
    expect(taxes.headers.get('x-cache')).toBe('DERIVED');
    expect(charged(taxes)).toBe('0');
    expect((await h.ledger()).totals.amount_minor).toBe(before);
    const branches = await h.call('gamma', `/v1/companies/${inn}/branches`);
    expect(branches.headers.get('x-cache')).toBe('MISS');
    expect(charged(branches)).toBe('9900');
    expect(await branches.json()).toHaveProperty('detail_level', 'full');
    expect((await h.ledger()).totals.amount_minor).toBe(before + 9900);
  });

  it('two replicas on Redis: one learns, the other derives the equal section from the shared dossier and never the different one', async (ctx) => {
    const r = await startRedisReplicas();
    if (!r) return ctx.skip();
    closers.push(() => r.close());
    const { h, second } = r;
    await h.emu('/modes', { section_differs: 'branches' });
    const [teach, inn] = knownInns(2, 42_000);
    const a = (app: string, path: string) => read(h.gateway.url, h.tokens[app]!, path);
    const b = (app: string, path: string) => read(second.url, h.tokens[app]!, path);

    // Replica A: a paid section read; its window brings the dossier in (prefetch), compared.
    expect(charged(await a('alpha', `/v1/companies/${teach}/founders`))).toBe('9900');
    for (
      let i = 0;
      i < 200 && (await verdicts(h.gateway.url, h.adminToken)).founders!.verdict !== 'equivalent';
      i++
    )
      await new Promise((res) => setTimeout(res, 10));
    // Still inside that window on A: branches is free upstream and compared: different.
    expect(charged(await a('alpha', `/v1/companies/${teach}/branches`))).toBe('0');
    // Replica B reads A's verdicts from the store's state role.
    const seen = await verdicts(second.url, h.adminToken);
    expect(seen.founders!.verdict).toBe('equivalent');
    expect(seen.branches!.verdict).toBe('different');

    // Another company's dossier, read through A; its window then closes.
    const dossier = await a('beta', `/v1/companies/${inn}`);
    expect(charged(dossier)).toBe('9900');
    const body = (await dossier.json()) as Record<string, unknown>;
    h.advance(20 * MINUTE);
    const readsBefore = ((await h.emu('/requests')) as { total: number }).total;
    const ledgerBefore = (await h.ledger()).totals.amount_minor;
    // B derives founders from the dossier A cached: no upstream call, no charge.
    const founders = await b('gamma', `/v1/companies/${inn}/founders`);
    expect(founders.headers.get('x-cache')).toBe('DERIVED');
    expect(charged(founders)).toBe('0');
    expect(await founders.json()).toEqual(body.founders);
    expect(((await h.emu('/requests')) as { total: number }).total).toBe(readsBefore);
    expect((await h.ledger()).totals.amount_minor).toBe(ledgerBefore);
    // ... and never branches, which A found different: B pays the endpoint for its own answer.
    const branches = await b('gamma', `/v1/companies/${inn}/branches`);
    expect(branches.headers.get('x-cache')).toBe('MISS');
    expect(charged(branches)).toBe('9900');
    expect(await branches.json()).toHaveProperty('detail_level', 'full');
    expect((await h.ledger()).totals.amount_minor).toBe(ledgerBefore + 9900);
  });
});
