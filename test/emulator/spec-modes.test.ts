// Conformance of every emulator mode for what the spec leaves open (docs/upstream-gaps.md,
// "Modes"), over real HTTP: stored error answers replayed or not, /v1/me with null prices
// and wallet, per-route latency on the emulator clock with seeded draws, the window a
// requisites check leaves under each reading, malformed URLs answered with the envelope,
// and webhook timestamps from the real clock after the emulator clock moved. Each mode is
// set once by option and once at run time through POST /_emulator/modes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, OffsetClock, seededRandom } from '../../src/clock.ts';
import { EmulatorModes, resolveModes } from '../../src/emulator/emulator-modes.ts';
import { parseEmulatorArgs } from '../../src/emulator/main.ts';
import {
  eventually,
  type Harness,
  knownInns,
  type Reply,
  startHarness,
  unknownInn,
} from './emulator-harness.ts';

const charged = (r: Reply) => Number(r.headers.get('x-charged-minor'));
const key = (k: string) => ({ headers: { 'idempotency-key': k } });
const HOUR = 3_600_000;

async function ledgerCount(h: Harness): Promise<number> {
  return (await h.control('GET', '/ledger')).json.totals.count;
}

function expectEnvelope(r: Reply, code: string): void {
  expect(r.json.error.code).toBe(code);
  expect(r.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
  expect(r.json.meta.request_id).toBe(r.headers.get('x-request-id'));
}

describe('mode options and flags', () => {
  it('parses every mode flag and reports bad values all at once', () => {
    const options = parseEmulatorArgs(
      [
        '--replay-errors',
        'all',
        '--null-prices-seconds',
        '30',
        '--null-wallet-seconds',
        '5',
        '--latency',
        'search=500-3000',
        '--latency',
        'company=20',
        '--requisites-check-window',
        'keep',
        '--webhook-clock',
        'emulator',
      ],
      {},
    );
    expect(options).toMatchObject({
      replayErrors: 'all',
      nullPricesSeconds: 30,
      nullWalletSeconds: 5,
      latency: { search: '500-3000', company: '20' },
      requisitesCheckWindow: 'keep',
      webhookClock: 'emulator',
    });
    expect(parseEmulatorArgs([], { CPGW_EMULATOR_LATENCY: 'search=1-2 me=3' })).toMatchObject({
      latency: { search: '1-2', me: '3' },
    });
    expect(() =>
      parseEmulatorArgs(
        [
          '--replay-errors',
          'some',
          '--latency',
          'search=3000-500',
          '--latency',
          'nowhere=5',
          '--latency',
          'search',
          '--webhook-clock',
          'moon',
          '--requisites-check-window',
          'x',
        ],
        {},
      ),
    ).toThrow(
      /ROUTE=MS[\s\S]*MIN <= MAX[\s\S]*nowhere[\s\S]*replay-errors[\s\S]*requisites-check-window[\s\S]*webhook-clock/,
    );
  });

  it('defaults: errors not replayed, prices and wallet known, no latency, the table for windows, real-clock webhooks', () => {
    expect(resolveModes({}, [])).toEqual({
      replayErrors: 'none',
      nullPricesSeconds: 0,
      nullWalletSeconds: 0,
      latency: {},
      requisitesCheckWindow: 'table',
      webhookClock: 'real',
      sectionDiffers: null,
    });
  });

  it('latency draws are uniform over MIN..MAX, inclusive, and repeat for the same seed', () => {
    const draw = (seed: number) => {
      const modes = new EmulatorModes(
        resolveModes({ latency: { search: '500-3000', '*': 7 } }, []),
        new ManualClock(0),
        seededRandom(seed),
      );
      return Array.from({ length: 2000 }, () => modes.latencyMs('search'));
    };
    const a = draw(11);
    expect(draw(11)).toEqual(a);
    expect(draw(12)).not.toEqual(a);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...a)).toBeLessThanOrEqual(3000);
    expect(Math.max(...a) - Math.min(...a)).toBeGreaterThan(2300);
    const modes = new EmulatorModes(
      resolveModes({ latency: { '*': 7 } }, []),
      new ManualClock(0),
      seededRandom(1),
    );
    expect(modes.latencyMs('bank')).toBe(7);
  });
});

describe('--replay-errors', () => {
  let h: Harness;
  const inns = knownInns(8, 2300);
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());
  beforeEach(async () => {
    await h.control('POST', '/reset');
    await h.control('POST', '/modes', { replay_errors: 'none' });
  });

  it('none (default): an error answer releases the key, the retry with it runs and is charged once', async () => {
    await h.control('POST', '/faults', { route: 'company', status: 503 });
    const first = await h.get(`/v1/companies/${inns[0]}`, key('k-none'));
    expect(first.status).toBe(503);
    expectEnvelope(first, 'billing_unavailable');
    const retry = await h.get(`/v1/companies/${inns[0]}`, key('k-none'));
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(charged(retry)).toBe(9900);
    expect(await ledgerCount(h)).toBe(1);
  });

  it('all: 503, 502, 402 and 404 answers are replayed for the key with a fresh request id; another key runs', async () => {
    expect((await h.control('POST', '/modes', { replay_errors: 'all' })).json.replay_errors).toBe('all');
    await h.control('POST', '/faults', { route: 'company', status: 503 });
    const first = await h.get(`/v1/companies/${inns[1]}`, key('k-503'));
    expect(first.status).toBe(503);
    for (let i = 0; i < 2; i++) {
      const again = await h.get(`/v1/companies/${inns[1]}`, key('k-503'));
      expect(again.status).toBe(503);
      expectEnvelope(again, 'billing_unavailable');
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.headers.get('x-charged-minor')).toBe('0');
      expect(again.json.meta.request_id).not.toBe(first.json.meta.request_id);
    }
    expect(await ledgerCount(h)).toBe(0);
    const fresh = await h.get(`/v1/companies/${inns[1]}`, key('k-503-b'));
    expect(fresh.status).toBe(200);
    expect(charged(fresh)).toBe(9900);

    await h.control('POST', '/faults', { route: 'check', status: 502 });
    expect((await h.post('/v1/check', { inn: inns[2] }, key('k-502'))).status).toBe(502);
    const check = await h.post('/v1/check', { inn: inns[2] }, key('k-502'));
    expect(check.status).toBe(502);
    expectEnvelope(check, 'source_unavailable');
    expect(check.headers.get('idempotent-replayed')).toBe('true');

    await h.control('POST', '/wallet', { balance_minor: 100 });
    const poor = await h.get(`/v1/requisites/${inns[3]}`, key('k-402'));
    expect(poor.status).toBe(402);
    await h.control('POST', '/wallet', { balance_minor: 1_000_000 });
    const stillPoor = await h.get(`/v1/requisites/${inns[3]}`, key('k-402'));
    expect(stillPoor.status).toBe(402);
    expect(stillPoor.json.error.details).toEqual({ balance_minor: 100, price_minor: 1500 });

    const missing = unknownInn();
    expect((await h.get(`/v1/companies/${missing}`, key('k-404'))).status).toBe(404);
    const missingAgain = await h.get(`/v1/companies/${missing}`, key('k-404'));
    expect(missingAgain.status).toBe(404);
    expect(missingAgain.headers.get('idempotent-replayed')).toBe('true');
    expect(await ledgerCount(h)).toBe(1);
  });

  it('all: the stored error lives the key lifetime (one day of emulator time), then the key runs again', async () => {
    await h.control('POST', '/modes', { replay_errors: 'all' });
    await h.control('POST', '/faults', { route: 'requisites', status: 503 });
    expect((await h.get(`/v1/requisites/${inns[4]}`, key('k-day'))).status).toBe(503);
    await h.advance(24 * HOUR - 1000);
    expect((await h.get(`/v1/requisites/${inns[4]}`, key('k-day'))).status).toBe(503);
    await h.advance(1000);
    const later = await h.get(`/v1/requisites/${inns[4]}`, key('k-day'));
    expect(later.status).toBe(200);
    expect(charged(later)).toBe(1500);
  });

  it('all, by option: refusals before the idempotency stage (422, 401) are never stored', async () => {
    const opt = await startHarness({ replayErrors: 'all' });
    try {
      expect((await opt.control('GET', '/modes')).json.replay_errors).toBe('all');
      expect((await opt.get('/v1/companies/123', key('k-422'))).status).toBe(422);
      expect((await opt.get(`/v1/companies/${inns[5]}`, key('k-422'))).status).toBe(200);
      expect((await opt.get(`/v1/companies/${inns[6]}`, { ...key('k-401'), key: 'nope' })).status).toBe(401);
      expect((await opt.get(`/v1/companies/${inns[6]}`, key('k-401'))).status).toBe(200);
    } finally {
      await opt.close();
    }
  });
});

describe('--null-prices-seconds and --null-wallet-seconds', () => {
  it('/v1/me answers null until the period passes on the emulator clock; charges go on at the real prices', async () => {
    const h = await startHarness({ nullPricesSeconds: 30, nullWalletSeconds: 60 });
    try {
      const [inn] = knownInns(1, 2400);
      let me = await h.get('/v1/me');
      expect(me.status).toBe(200);
      expect(me.json.prices).toBeNull();
      expect(me.json.wallet).toBeNull();
      expect(me.json.key.name).toBe('emulator-key');
      expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
      await h.advance(29_000);
      expect((await h.get('/v1/me')).json.prices).toBeNull();
      await h.advance(1000);
      me = await h.get('/v1/me');
      expect(me.json.prices).toContainEqual(expect.objectContaining({ key: 'dossier', price_minor: 9900 }));
      expect(me.json.wallet).toBeNull();
      await h.advance(30_000);
      expect((await h.get('/v1/me')).json.wallet).toMatchObject({ balance_minor: 10_000_000 - 9900 });

      await h.control('POST', '/reset');
      me = await h.get('/v1/me');
      expect([me.json.prices, me.json.wallet]).toEqual([null, null]);

      const changed = await h.control('POST', '/modes', { null_prices_seconds: 0, null_wallet_seconds: 10 });
      expect(changed.json).toMatchObject({ prices_known: true, wallet_known: false });
      me = await h.get('/v1/me');
      expect(me.json.prices).not.toBeNull();
      expect(me.json.wallet).toBeNull();
    } finally {
      await h.close();
    }
  });
});

describe('--latency', () => {
  it('holds a route for a seeded draw of emulator time: nothing before, the answer right after', async () => {
    const base = new ManualClock(Date.UTC(2026, 0, 15, 9));
    const h = await startHarness({
      clock: new OffsetClock(base),
      latency: { search: '500-3000' },
      random: seededRandom(42),
    });
    try {
      const expected = 500 + Math.floor(seededRandom(42)() * 2501);
      let answered = false;
      const pending = h.get('/v1/search?q=%D1%80%D0%BE%D0%BC%D0%B0%D1%88%D0%BA%D0%B0').then((r) => {
        answered = true;
        return r;
      });
      await eventually(async () => h.emu.context.scheduler.pending > 0);
      await h.advance(expected - 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(answered).toBe(false);
      await h.advance(1);
      const r = await pending;
      expect(r.status).toBe(200);
      // other routes are not delayed
      expect((await h.get('/v1/banks/044525225')).status).toBe(200);
    } finally {
      await h.close();
    }
  });

  it('runs on real timers too, and can be set and cleared at run time', async () => {
    const h = await startHarness();
    try {
      const set = await h.control('POST', '/modes', { latency: { bank: '150-200' } });
      expect(set.json.latency).toEqual({ bank: '150-200' });
      const started = performance.now();
      expect((await h.get('/v1/banks/044525225')).status).toBe(200);
      expect(performance.now() - started).toBeGreaterThanOrEqual(140);
      expect((await h.control('POST', '/modes', { latency: {} })).json.latency).toEqual({});
      const bad = await h.control('POST', '/modes', { latency: { bank: 'slow' } });
      expect(bad.status).toBe(422);
      expect(bad.json.error.details.fields[0].message).toMatch(/MS or MIN-MAX/);
    } finally {
      await h.close();
    }
  });
});

describe('--requisites-check-window', () => {
  let h: Harness;
  const inns = knownInns(6, 2500);
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());
  beforeEach(async () => {
    await h.control('POST', '/reset');
  });

  async function windowsOf(inn: string): Promise<string[]> {
    const r = await h.control('GET', '/windows');
    return r.json.windows
      .filter((w: { inn: string }) => w.inn === inn)
      .map((w: { kind: string }) => w.kind)
      .sort();
  }

  /** Dossier read at t0, then a requisites check whose data is ready 5 minutes later. */
  async function dossierThenRequisitesCheck(inn: string): Promise<void> {
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
    await h.advance(5 * 60_000);
    const check = await h.post('/v1/check', { inn, purpose: 'requisites' });
    expect(check.status).toBe(202);
    await h.advance(1000);
    await eventually(async () => (await h.get(`/v1/checks/${check.json.check_id}`)).status === 200);
  }

  it('table (default): the finished requisites check leaves a requisites window; the dossier window ends', async () => {
    const inn = inns[0]!;
    await dossierThenRequisitesCheck(inn);
    expect(await windowsOf(inn)).toEqual(['requisites']);
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(0);
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
  });

  it('table: a requisites check with no window open opens a requisites window from the moment data is ready', async () => {
    const inn = inns[1]!;
    const check = await h.post('/v1/check', { inn, purpose: 'requisites' });
    await h.advance(1000);
    await eventually(async () => (await h.get(`/v1/checks/${check.json.check_id}`)).status === 200);
    expect(await windowsOf(inn)).toEqual(['requisites']);
    const window = (await h.control('GET', '/windows')).json.windows[0];
    // checkSeconds 0.3 in the harness: the data was ready 300 ms after creation
    expect(Date.parse(window.opened_at)).toBe(Date.parse(check.json.created_at) + 300);
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(0);
    await h.advance(15 * 60_000);
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(1500);
  });

  it('both: the requisites window opens beside the dossier window and outlasts it', async () => {
    await h.control('POST', '/modes', { requisites_check_window: 'both' });
    try {
      const inn = inns[2]!;
      await dossierThenRequisitesCheck(inn);
      expect(await windowsOf(inn)).toEqual(['dossier', 'requisites']);
      expect(charged(await h.get(`/v1/companies/${inn}/founders`))).toBe(0);
      await h.advance(10 * 60_000);
      expect(await windowsOf(inn)).toEqual(['requisites']);
      expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(0);
      expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
    } finally {
      await h.control('POST', '/modes', { requisites_check_window: 'table' });
    }
  });

  it('keep (the old reading): the dossier window stays and no requisites window opens', async () => {
    const k = await startHarness({ requisitesCheckWindow: 'keep' });
    try {
      const inn = inns[3]!;
      expect(charged(await k.get(`/v1/companies/${inn}`))).toBe(9900);
      await k.advance(5 * 60_000);
      const check = await k.post('/v1/check', { inn, purpose: 'requisites' });
      await k.advance(1000);
      await eventually(async () => (await k.get(`/v1/checks/${check.json.check_id}`)).status === 200);
      const kinds = (await k.control('GET', '/windows')).json.windows.map((w: { kind: string }) => w.kind);
      expect(kinds).toEqual(['dossier']);
      await k.advance(10 * 60_000);
      expect(charged(await k.get(`/v1/requisites/${inn}`))).toBe(1500);
    } finally {
      await k.close();
    }
  });
});

describe('malformed requests', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h.close());

  it('a path the router cannot decode is 422 in the envelope with X-Request-Id, and 401 without a key', async () => {
    for (const path of ['/v1/banks/%FF', '/v1/companies/%E0%A4%A/founders', '/v1/nowhere/%C3']) {
      const r = await h.get(path);
      expect(r.status).toBe(422);
      expectEnvelope(r, 'validation_failed');
      expect(r.json.error.details.fields[0]).toMatchObject({ field: 'path', code: 'invalid_encoding' });
      const anonymous = await h.get(path, { key: null });
      expect(anonymous.status).toBe(401);
      expectEnvelope(anonymous, 'unauthorized');
    }
    const log = (await h.control('GET', '/requests')).json.requests;
    expect(log.filter((e: { path: string }) => e.path === '/v1/banks/%FF')).toHaveLength(2);
  });

  it('a query value with broken percent-encoding is 422 for that field, never searched as raw text', async () => {
    for (const path of ['/v1/search?q=%FF%FEabc', '/v1/suggest?q=abc%', '/v1/search?q=abcd&kind=%zz']) {
      const r = await h.get(path);
      expect(r.status).toBe(422);
      expectEnvelope(r, 'validation_failed');
      expect(r.json.error.details.fields[0].code).toBe('invalid_encoding');
    }
    expect((await h.get('/v1/search?q=%FF%FEabc')).json.error.details.fields[0].field).toBe('q');
    expect((await h.get('/v1/search?q=abc+def%20x')).status).toBe(200);
  });
});

describe('--webhook-clock', () => {
  let receiver: Server;
  let url: string;
  const stamps: number[] = [];
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const signature = String(req.headers['x-service-signature'] ?? '');
      stamps.push(Number(/t=(\d+)/.exec(signature)?.[1]));
      req.resume();
      req.on('end', () => res.writeHead(200).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  });
  afterAll(async () => {
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('real (default): t= stays within the 300 s tolerance after the emulator clock moved two hours; emulator: it follows', async () => {
    const h = await startHarness({ webhookUrl: url, checkSeconds: 0.15, checkWaitSeconds: 0.05 });
    try {
      const inns = knownInns(2, 2600);
      await h.advance(2 * HOUR);
      expect((await h.post('/v1/check', { inn: inns[0] })).status).toBe(202);
      await eventually(async () => stamps.length === 1);
      expect(Math.abs(stamps[0]! - Date.now() / 1000)).toBeLessThan(300);

      await h.control('POST', '/modes', { webhook_clock: 'emulator' });
      expect((await h.post('/v1/check', { inn: inns[1] })).status).toBe(202);
      await eventually(async () => stamps.length === 2);
      expect(Math.abs(stamps[1]! - h.emu.clock.now() / 1000)).toBeLessThan(60);
      expect(stamps[1]! - Date.now() / 1000).toBeGreaterThan(2 * 3600 - 60);
    } finally {
      await h.close();
    }
  });
});
