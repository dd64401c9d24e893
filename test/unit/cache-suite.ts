// The ResponseCache behaviour suite, run against every Store backend (memory in
// test/unit/cache-response-memory.test.ts, Redis in test/integration/cache-store-redis.test.ts).
// Ages follow a ManualClock; store TTL expiry is only asserted where the backend follows that
// same clock (`clockDrivenTtl`).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type CacheConfigInput, resolveCacheConfig } from '../../src/cache/cache-config.ts';
import { parseCacheControl } from '../../src/cache/cache-control.ts';
import { type CacheEntry, decodeEntry, encodeEntry } from '../../src/cache/cache-entry.ts';
import { cachePolicy } from '../../src/cache/cache-keys.ts';
import { decompressBody } from '../../src/cache/content-coding.ts';
import { type CacheRequest, ResponseCache, type UpstreamAnswer } from '../../src/cache/response-cache.ts';
import { ManualClock } from '../../src/clock.ts';
import type { Store } from '../../src/store/store.ts';
import {
  answer,
  bankBody,
  CHECK_ID,
  dossierBody,
  errorBody,
  INN,
  notFoundBody,
  OTHER_INN,
  request,
} from './cache-fixtures.ts';

export interface SuiteBackend {
  store: Store;
  close(): Promise<void>;
}

export interface SuiteOptions {
  /** The backend expires entries by the clock it was given (memory), not by wall time (Redis). */
  clockDrivenTtl: boolean;
}

const S = 1000;
const H = 3600 * S;

export function runResponseCacheSuite(
  name: string,
  open: (clock: ManualClock) => Promise<SuiteBackend>,
  options: SuiteOptions,
): void {
  describe(`ResponseCache over ${name}`, () => {
    let clock: ManualClock;
    let backend: SuiteBackend;
    let cache: ResponseCache;
    let errors: unknown[];

    const make = (config: CacheConfigInput = {}, store: Store = backend.store): ResponseCache =>
      new ResponseCache({
        store,
        clock,
        config: resolveCacheConfig({ perApp: { risk: { dossier: H } }, ...config }),
        onError: (e) => errors.push(e),
      });

    beforeEach(async () => {
      clock = new ManualClock();
      backend = await open(clock);
      errors = [];
      cache = make();
    });

    afterEach(async () => {
      await backend.close();
    });

    const dossier = dossierBody();

    /** save(), then the compressed copy swapped in after it (a large body is stored as it came first). */
    const savePacked = async (c: ResponseCache, req: CacheRequest, ans: UpstreamAnswer) => {
      await c.save(req, ans);
      await c.packed();
      return c.peek(req);
    };

    describe('hits and misses', () => {
      it('a first read is a miss; after save the same read is a HIT with Age 0', async () => {
        expect(await cache.lookup(request('company'))).toEqual({ action: 'fetch', reason: 'miss' });
        const saved = await cache.save(request('company'), answer(200, dossier));
        expect(saved?.encoding).toBe('identity'); // stored as it came; compressed right after
        expect(await cache.lookup(request('company'))).toMatchObject({
          action: 'serve',
          age: 0,
          status: 'HIT',
        });
        await cache.packed();
        const hit = await cache.lookup(request('company'));
        expect(hit).toMatchObject({ action: 'serve', age: 0, status: 'HIT' });
        expect((hit as { entry: CacheEntry }).entry.encoding).toBe('br');
        expect((hit as { entry: CacheEntry }).entry.storedAt).toBe(saved!.storedAt);
      });

      it("the same body stored again reuses its compressed copy from the key's second store on: stored compressed at once, nothing compressed", async () => {
        await savePacked(cache, request('company'), answer(200, dossier));
        clock.advance(1_000);
        // A key's first body is not kept (a paid miss's body would outlive the young generation):
        // its second store compresses again, as a new body.
        const second = await cache.save(request('company'), answer(200, Buffer.from(dossier)));
        expect(second?.encoding).toBe('identity');
        await cache.packed();
        clock.advance(1_000);
        const again = await cache.save(request('company'), answer(200, Buffer.from(dossier)));
        expect(again?.encoding).toBe('br'); // no identity copy first, no compression queued
        const entry = await cache.peek(request('company'));
        expect(entry?.storedAt).toBe(clock.now());
        expect(decompressBody(entry!.body, entry!.encoding).equals(dossier)).toBe(true);
        // One byte different: compressed anew (identity first, as any new body).
        const other = Buffer.from(dossier);
        other.write('{"other":1,', 0);
        const changed = await cache.save(request('company'), answer(200, other));
        expect(changed?.encoding).toBe('identity');
        await cache.packed();
        const repacked = await cache.peek(request('company'));
        expect(decompressBody(repacked!.body, repacked!.encoding).equals(other)).toBe(true);
      });

      it('an entry read right after its save is what its stored bytes decode to (small and large, before and after packing)', async () => {
        const stored = async (req: CacheRequest) =>
          decodeEntry((await backend.store.cacheGet(cachePolicy(req.route, req.params, req.query)!.key))!);
        for (const [req, body] of [
          [request('bank'), bankBody()],
          [request('company'), dossier],
        ] as const) {
          await cache.save(req, answer(200, body));
          const read = await cache.peek(req);
          expect(read).toEqual(await stored(req));
          expect(read!.body.equals(await stored(req).then((e) => e!.body))).toBe(true);
          await cache.packed();
          expect(await cache.peek(req)).toEqual(await stored(req));
          expect(
            decompressBody((await cache.peek(req))!.body, (await cache.peek(req))!.encoding).equals(body),
          ).toBe(true);
        }
      });

      it('a compressed copy never replaces a newer entry, nor brings back a purged one', async () => {
        await cache.save(request('company'), answer(200, dossier));
        clock.advance(1_000);
        const newer = Buffer.from(dossier);
        newer.write('{"newer":1,', 0); // same length, other bytes
        await cache.save(request('company'), answer(200, newer)); // replaces before the first is packed
        await cache.packed();
        const entry = await cache.peek(request('company'));
        expect(entry?.storedAt).toBe(clock.now());
        expect(decompressBody(entry!.body, entry!.encoding).subarray(0, 11).toString()).toBe('{"newer":1,');
        await cache.save(request('company', { params: { inn: OTHER_INN } }), answer(200, dossier));
        await cache.purgeInn(OTHER_INN);
        await cache.packed();
        expect(await cache.peek(request('company', { params: { inn: OTHER_INN } }))).toBeNull();
      });

      it('is shared across apps: what one app paid for serves another', async () => {
        await cache.save(request('company', { app: 'crm' }), answer(200, dossier));
        expect(await cache.lookup(request('company', { app: 'billing' }))).toMatchObject({ status: 'HIT' });
      });

      it('Age grows with the clock', async () => {
        await cache.save(request('company'), answer(200, dossier));
        clock.advance(125 * S + 900);
        expect(await cache.lookup(request('company'))).toMatchObject({ action: 'serve', age: 125 });
      });

      it('an entry past its max age is fetched again, offered as the stale fallback', async () => {
        await cache.save(request('company'), answer(200, dossier));
        clock.advance(6 * H);
        const lookup = await cache.lookup(request('company'));
        expect(lookup).toMatchObject({ action: 'fetch', reason: 'expired' });
        expect(lookup.action === 'fetch' && lookup.staleEntry?.status).toBe(200);
      });

      it('default max ages per route: bank 24 h, suggest 1 h, search 10 min', async () => {
        await cache.save(request('bank'), answer(200, bankBody()));
        await cache.save(request('suggest'), answer(200, Buffer.from('{"items":[]}')));
        await cache.save(request('search'), answer(200, Buffer.from('{"data":{}}')));
        clock.advance(10 * 60 * S);
        expect((await cache.lookup(request('search'))).action).toBe('fetch');
        expect((await cache.lookup(request('suggest'))).action).toBe('serve');
        clock.advance(50 * 60 * S);
        expect((await cache.lookup(request('suggest'))).action).toBe('fetch');
        expect((await cache.lookup(request('bank'))).action).toBe('serve');
        clock.advance(23 * H);
        expect((await cache.lookup(request('bank'))).action).toBe('fetch');
      });

      it('per-app max age: one app may accept a shorter age than the others', async () => {
        await cache.save(request('company'), answer(200, dossier));
        clock.advance(2 * H);
        expect((await cache.lookup(request('company', { app: 'risk' }))).action).toBe('fetch');
        expect((await cache.lookup(request('company', { app: 'crm' }))).action).toBe('serve');
      });

      it('search with the same query (default kind and page) hits; other spacing or page misses', async () => {
        await cache.save(
          request('search', { query: { q: 'Ромашка  Север' } }),
          answer(200, Buffer.from('{}')),
        );
        const same = request('search', { query: { q: 'Ромашка  Север', kind: 'all', page: '1' } });
        expect((await cache.lookup(same)).action).toBe('serve');
        // The upstream echoes the text as sent: other spacing is another answer (issue #18).
        const spaced = request('search', { query: { q: ' Ромашка Север' } });
        expect((await cache.lookup(spaced)).action).toBe('fetch');
        const page2 = request('search', { query: { q: 'Ромашка Север', page: '2' } });
        expect((await cache.lookup(page2)).action).toBe('fetch');
      });

      it('section pages are cached per cursor', async () => {
        await cache.save(
          request('section', { query: { cursor: 'p2' } }),
          answer(200, Buffer.from('{"items":[2]}')),
        );
        expect((await cache.lookup(request('section', { query: { cursor: 'p2' } }))).action).toBe('serve');
        expect((await cache.lookup(request('section'))).action).toBe('fetch');
      });

      it('routes that are never cached are a bypass', async () => {
        expect(await cache.lookup(request('me', { params: {} }))).toEqual({ action: 'bypass' });
        expect(await cache.save(request('me', { params: {} }), answer(200, Buffer.from('{}')))).toBeNull();
      });

      it('a finished check result is cached by check id for 7 days, tagged with its INN', async () => {
        expect(await cache.save(request('check_poll'), answer(200, dossier))).toMatchObject({ inn: INN });
        clock.advance(7 * 24 * H - 1);
        expect(await cache.lookup(request('check_poll'))).toMatchObject({ action: 'serve' });
        clock.advance(1);
        expect((await cache.lookup(request('check_poll'))).action).toBe('fetch');
      });

      it('a check ticket (202, still collecting) is not stored', async () => {
        expect(
          await cache.save(request('check_poll'), answer(202, Buffer.from(`{"check_id":"${CHECK_ID}"}`))),
        ).toBeNull();
        expect((await cache.lookup(request('check_poll'))).action).toBe('fetch');
      });
    });

    describe('request Cache-Control', () => {
      beforeEach(async () => {
        await cache.save(request('company'), answer(200, dossier));
      });

      it('max-age=N: an entry older than N seconds is fetched', async () => {
        clock.advance(61 * S);
        expect((await cache.lookup(request('company', { cacheControl: 'max-age=60' }))).action).toBe('fetch');
        expect((await cache.lookup(request('company', { cacheControl: 'max-age=61' }))).action).toBe('serve');
      });

      it('max-stale: a stale entry is served as STALE', async () => {
        clock.advance(8 * H);
        expect(await cache.lookup(request('company', { cacheControl: 'max-stale' }))).toMatchObject({
          action: 'serve',
          status: 'STALE',
          age: 8 * 3600,
        });
      });

      it('max-stale=N: staleness beyond N is fetched', async () => {
        clock.advance(6 * H + 61 * S);
        expect((await cache.lookup(request('company', { cacheControl: 'max-stale=60' }))).action).toBe(
          'fetch',
        );
      });

      it('min-fresh=N: an entry expiring within N seconds is fetched', async () => {
        clock.advance(5 * H + 30 * 60 * S);
        expect((await cache.lookup(request('company', { cacheControl: 'min-fresh=3600' }))).action).toBe(
          'fetch',
        );
        expect((await cache.lookup(request('company', { cacheControl: 'min-fresh=1800' }))).action).toBe(
          'serve',
        );
      });

      it('no-cache: goes upstream although a fresh entry exists; the new answer replaces it', async () => {
        const lookup = await cache.lookup(request('company', { cacheControl: 'no-cache' }));
        expect(lookup).toMatchObject({ action: 'fetch', reason: 'no-cache' });
        clock.advance(10 * S);
        await cache.save(request('company', { cacheControl: 'no-cache' }), answer(200, dossier));
        expect(await cache.lookup(request('company'))).toMatchObject({ action: 'serve', age: 0 });
      });

      it('no-store: the answer is not stored, but a stored answer may still be served', async () => {
        const bank = request('bank', { cacheControl: 'no-store' });
        expect(await cache.save(bank, answer(200, bankBody()))).toBeNull();
        expect((await cache.lookup(request('bank'))).action).toBe('fetch');
        expect((await cache.lookup(request('company', { cacheControl: 'no-store' }))).action).toBe('serve');
      });

      it('only-if-cached: a miss is not_cached, a usable entry is served', async () => {
        expect(await cache.lookup(request('bank', { cacheControl: 'only-if-cached' }))).toEqual({
          action: 'not_cached',
        });
        expect((await cache.lookup(request('company', { cacheControl: 'only-if-cached' }))).action).toBe(
          'serve',
        );
        clock.advance(7 * H);
        expect(await cache.lookup(request('company', { cacheControl: 'only-if-cached' }))).toEqual({
          action: 'not_cached',
        });
      });
    });

    describe('coverage windows', () => {
      beforeEach(async () => {
        await cache.save(request('company'), answer(200, dossier));
      });

      it('inside an open window, an entry older than the refresh age is refreshed for free', async () => {
        clock.advance(20 * 60 * S);
        const lookup = await cache.lookup(request('company', { windowOpen: true }));
        expect(lookup).toMatchObject({ action: 'fetch', reason: 'window-refresh' });
        expect(lookup.action === 'fetch' && lookup.staleEntry).toBeTruthy();
      });

      it('outside the window the same entry is a HIT (no charge)', async () => {
        clock.advance(20 * 60 * S);
        expect(await cache.lookup(request('company', { windowOpen: false }))).toMatchObject({
          status: 'HIT',
        });
      });

      it('outside the window a stale entry the client accepts is served; inside it is refreshed', async () => {
        clock.advance(7 * H);
        const stale = { cacheControl: 'max-stale=7200' };
        expect(await cache.lookup(request('company', { ...stale, windowOpen: false }))).toMatchObject({
          status: 'STALE',
        });
        expect(await cache.lookup(request('company', { ...stale, windowOpen: true }))).toMatchObject({
          reason: 'window-refresh',
        });
      });
    });

    describe('stale-if-error and failed refreshes', () => {
      beforeEach(async () => {
        await cache.save(request('company'), answer(200, dossier));
      });

      it('serves the stale entry when the upstream fails, within the max staleness', async () => {
        clock.advance(20 * H);
        const lookup = await cache.lookup(request('company'));
        if (lookup.action !== 'fetch') throw new Error('expected fetch');
        const stale = cache.onUpstreamError(lookup.staleEntry, parseCacheControl(''), 'crm');
        expect(stale).not.toBeNull();
        expect(cache.render(stale!, undefined, 'STALE').headers).toMatchObject({
          'x-cache': 'STALE',
          age: '72000',
        });
      });

      it('refuses an entry stale beyond the max staleness', async () => {
        clock.advance(7 * H);
        const lookup = await cache.lookup(request('company'));
        if (lookup.action !== 'fetch') throw new Error('expected fetch');
        clock.advance(24 * H); // stale by 25 h now: beyond the default 24 h
        expect(cache.onUpstreamError(lookup.staleEntry, parseCacheControl(''), 'crm')).toBeNull();
      });

      it('nothing to stand in on a miss', () => {
        expect(cache.onUpstreamError(undefined, parseCacheControl(''))).toBeNull();
      });

      it('an error answer never replaces a good entry', async () => {
        clock.advance(7 * H);
        for (const [status, code] of [
          [502, 'source_unavailable'],
          [503, 'billing_unavailable'],
          [500, 'internal_error'],
          [429, 'rate_limited'],
          [402, 'insufficient_funds'],
        ] as const) {
          expect(await cache.save(request('company'), answer(status, errorBody(code)))).toBeNull();
        }
        const lookup = await cache.lookup(request('company'));
        expect(lookup.action === 'fetch' && lookup.staleEntry?.status).toBe(200);
      });

      it('a 404 does not displace a good entry of the same company', async () => {
        expect(await cache.save(request('company'), answer(404, notFoundBody()))).toBeNull();
        expect(await cache.lookup(request('company'))).toMatchObject({ action: 'serve' });
        const served = await cache.lookup(request('company'));
        expect(served.action === 'serve' && served.entry.status).toBe(200);
      });
    });

    describe('negative cache', () => {
      it('caches an unknown INN (404 not_found) for 1 h', async () => {
        const req = request('company', { params: { inn: OTHER_INN } });
        expect(await cache.save(req, answer(404, notFoundBody()))).toMatchObject({
          kind: 'negative',
          status: 404,
        });
        const hit = await cache.lookup(req);
        expect(hit).toMatchObject({ action: 'serve', status: 'HIT' });
        expect(hit.action === 'serve' && cache.render(hit.entry, undefined).status).toBe(404);
        clock.advance(H);
        expect((await cache.lookup(req)).action).toBe('fetch');
      });

      it('a later 200 replaces the negative entry', async () => {
        const req = request('requisites', { params: { inn: OTHER_INN } });
        await cache.save(req, answer(404, notFoundBody()));
        await cache.save(req, answer(200, Buffer.from('{"inn":"7736207543"}')));
        const hit = await cache.lookup(req);
        expect(hit.action === 'serve' && hit.entry.status).toBe(200);
      });
    });

    describe('render', () => {
      it('sends the stored brotli body untouched to a client that accepts br', async () => {
        const saved = (await savePacked(cache, request('company'), answer(200, dossier)))!;
        const out = cache.render(saved, 'gzip, deflate, br');
        expect(out.headers).toMatchObject({
          'content-encoding': 'br',
          vary: 'Accept-Encoding',
          'x-cache': 'HIT',
        });
        expect(out.body).toBe(saved.body);
        expect(out.body.length).toBeLessThan(20_000);
      });

      it('decompresses once for a client that does not accept the stored coding', async () => {
        await cache.save(request('company'), answer(200, dossier));
        const hit = await cache.lookup(request('company'));
        if (hit.action !== 'serve') throw new Error('expected a hit');
        for (const acceptEncoding of [undefined, 'gzip, deflate', 'br;q=0, gzip']) {
          const out = cache.render(hit.entry, acceptEncoding);
          expect(out.headers['content-encoding']).toBeUndefined();
          expect(out.headers.vary).toBe('Accept-Encoding');
          expect(out.body.equals(dossier)).toBe(true);
        }
      });

      it('a gzip-configured cache passes gzip through and still reads brotli entries', async () => {
        const saved = (await savePacked(cache, request('company'), answer(200, dossier)))!;
        const gzipCache = make({ compression: { encoding: 'gzip', level: 6 } });
        const gz = (await savePacked(gzipCache, request('requisites'), answer(200, dossier)))!;
        expect(gz.encoding).toBe('gzip');
        expect(gzipCache.render(gz, 'gzip').headers['content-encoding']).toBe('gzip');
        const old = await gzipCache.lookup(request('company'));
        expect(old.action === 'serve' && gzipCache.render(old.entry, 'gzip').body.equals(dossier)).toBe(true);
        expect(saved.encoding).toBe('br');
      });

      it('carries the answer headers, Age and X-Cache, never per-call headers', async () => {
        await cache.save(request('bank'), answer(200, bankBody()));
        clock.advance(42 * S);
        const hit = await cache.lookup(request('bank'));
        if (hit.action !== 'serve') throw new Error('expected a hit');
        const out = cache.render(hit.entry, 'gzip', 'COALESCED');
        expect(out.headers).toEqual({
          'content-type': 'application/json; charset=utf-8',
          'x-upstream-request-id': 'up-req-1',
          age: '42',
          'x-cache': 'COALESCED',
          vary: 'Accept-Encoding',
        });
        expect(out.body.equals(bankBody())).toBe(true); // under 1 KB: stored as is
      });
    });

    describe('purge and stats', () => {
      it('purges everything about one INN and nothing else', async () => {
        await cache.save(request('company'), answer(200, dossier));
        await cache.save(request('section'), answer(200, Buffer.from('{"items":[]}')));
        await cache.save(
          request('section', { query: { cursor: 'c2' } }),
          answer(200, Buffer.from('{"items":[]}')),
        );
        await cache.save(request('requisites'), answer(200, Buffer.from('{}')));
        await cache.save(request('person', { params: { inn: INN } }), answer(404, notFoundBody()));
        await cache.save(request('check_poll'), answer(200, dossier));
        await cache.save(request('company', { params: { inn: OTHER_INN } }), answer(200, Buffer.from('{}')));
        await cache.save(request('bank'), answer(200, bankBody()));

        expect(await cache.purgeInn(INN)).toBe(6);
        for (const route of ['company', 'section', 'requisites', 'person', 'check_poll'] as const) {
          expect((await cache.lookup(request(route))).action, route).toBe('fetch');
        }
        expect((await cache.lookup(request('company', { params: { inn: OTHER_INN } }))).action).toBe('serve');
        expect((await cache.lookup(request('bank'))).action).toBe('serve');
        await expect(cache.purgeInn('not-an-inn')).rejects.toThrow(RangeError);
      });

      it('counts hits, misses, stale answers, bytes and entries per route', async () => {
        await cache.lookup(request('company'));
        await cache.save(request('company'), answer(200, dossier));
        await cache.save(request('bank'), answer(200, bankBody()));
        await cache.packed();
        await cache.lookup(request('company'));
        await cache.lookup(request('company'));
        clock.advance(7 * H);
        await cache.lookup(request('company', { cacheControl: 'max-stale' }));
        await cache.lookup(request('bank', { cacheControl: 'only-if-cached, max-age=1' }));
        const stats = await cache.stats();
        expect(stats.routes.company).toMatchObject({ hits: 2, misses: 1, stale: 1, stores: 1, entries: 1 });
        expect(stats.routes.bank).toMatchObject({ notCached: 1, stores: 1, entries: 1 });
        expect(stats.entries).toBe(2);
        expect(stats.bytes).toBeGreaterThan(1000);
        expect(stats.bytes).toBeLessThan(25_000);
        await cache.purgeInn(INN);
        expect((await cache.stats()).routes.company!.entries).toBe(0);
      });
    });

    describe('faults', () => {
      it('an entry it cannot decode is a miss and is removed', async () => {
        await backend.store.cacheSet(`company:${INN}`, Buffer.from('garbage'), { ttlMs: H });
        expect(await cache.lookup(request('company'))).toEqual({ action: 'fetch', reason: 'miss' });
        expect(await backend.store.cacheGet(`company:${INN}`)).toBeNull();
        expect(errors).toHaveLength(1);
      });

      it('a store that fails is a miss (only-if-cached: not_cached), and save does not throw', async () => {
        const failing = new Proxy(backend.store, {
          get(target, prop, receiver) {
            if (typeof prop === 'string' && prop.startsWith('cache')) {
              return () => Promise.reject(new Error('store down'));
            }
            return Reflect.get(target, prop, receiver);
          },
        });
        const broken = make({}, failing);
        expect(await broken.lookup(request('company'))).toEqual({ action: 'fetch', reason: 'miss' });
        expect(await broken.lookup(request('company', { cacheControl: 'only-if-cached' }))).toEqual({
          action: 'not_cached',
        });
        expect(await broken.save(request('company'), answer(200, dossier))).toBeNull();
        expect((await broken.stats()).bytes).toBeNull();
        expect(errors.length).toBeGreaterThanOrEqual(3);
      });

      it.runIf(options.clockDrivenTtl)(
        'the store drops an entry once it is past max age plus max staleness',
        async () => {
          await cache.save(request('company'), answer(200, dossier));
          clock.advance(30 * H);
          expect(await cache.peek(request('company'))).not.toBeNull();
          clock.advance(1);
          expect(await cache.peek(request('company'))).toBeNull();
        },
      );

      it('entries written by another codec version are not served', async () => {
        const saved = (await cache.save(request('company'), answer(200, dossier)))!;
        const bytes = encodeEntry(saved);
        bytes[3] = 2; // a future format version
        await backend.store.cacheSet(`company:${INN}`, bytes, { ttlMs: H });
        expect((await cache.lookup(request('company'))).action).toBe('fetch');
      });
    });
  });
}
