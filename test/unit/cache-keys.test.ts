// Cache keys, TTL classes, storable answers and the cache config: what shares a key, what
// does not, and which upstream answers may ever be stored.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_AGE_MS,
  maxAgeFor,
  resolveCacheConfig,
  storageTtlMs,
} from '../../src/cache/cache-config.ts';
import { cachePolicy, innTag, normalizeQueryText, storableKind } from '../../src/cache/cache-keys.ts';
import { innTag as redisInnSegment } from '../../src/store/redis/keys.ts';
import { errorBody, INN, notFoundBody } from './cache-fixtures.ts';

const H = 3_600_000;

describe('cachePolicy: keys', () => {
  it('names every cacheable route with its TTL class', () => {
    expect(cachePolicy('company', { inn: INN }, {})).toEqual({
      key: `company:${INN}`,
      kind: 'dossier',
      inn: INN,
      windowed: true,
    });
    expect(cachePolicy('section', { inn: INN, section: 'taxes' }, {})?.kind).toBe('dossier');
    expect(cachePolicy('requisites', { inn: INN }, {})).toMatchObject({ kind: 'requisites', windowed: true });
    expect(cachePolicy('person', { inn: '773412345677' }, {})).toMatchObject({
      kind: 'person',
      windowed: false,
    });
    expect(cachePolicy('bank', { bic: '044525225' }, {})).toMatchObject({ key: 'bank:044525225', inn: null });
    expect(cachePolicy('check_poll', { uuid: 'AB-CD' }, {})).toMatchObject({
      key: 'check:ab-cd',
      kind: 'check',
    });
    expect(cachePolicy('suggest', {}, { q: 'abc' })?.kind).toBe('suggest');
    expect(cachePolicy('search', {}, { q: 'abc' })?.kind).toBe('search');
  });

  it('never caches /v1/me, the OpenAPI document or check creation', () => {
    expect(cachePolicy('me', {}, {})).toBeNull();
    expect(cachePolicy('openapi', {}, {})).toBeNull();
    expect(cachePolicy('check_create', {}, {})).toBeNull();
  });

  it('puts the section cursor in the key, keeping "no cursor" apart from "empty cursor"', () => {
    const key = (query: Record<string, string>) =>
      cachePolicy('section', { inn: INN, section: 'arbitration' }, query)?.key;
    expect(key({})).not.toBe(key({ cursor: 'abc' }));
    expect(key({ cursor: 'abc' })).not.toBe(key({ cursor: 'abd' }));
    expect(key({})).not.toBe(key({ cursor: '' }));
    expect(key({ cursor: 'a:b' })).not.toContain('a:b'); // no stray segment separators
  });

  it('normalizes search: default kind and page; unknown params ignored; text as sent', () => {
    const key = (query: Record<string, string>) => cachePolicy('search', {}, query)?.key;
    const base = key({ q: 'Ромашка Север' });
    expect(key({ q: 'Ромашка Север', kind: 'all', page: '1' })).toBe(base);
    expect(key({ q: 'Ромашка Север', page: '01', utm: 'x' })).toBe(base);
    // The upstream echoes the text as sent: spaces and Unicode forms are kept apart (issue #18).
    expect(key({ q: '  Ромашка   Север ' })).not.toBe(base);
    expect(key({ q: 'Ромашка Север ' })).not.toBe(base);
    expect(key({ q: 'Урожай'.normalize('NFD') })).not.toBe(key({ q: 'Урожай'.normalize('NFC') }));
    expect(key({ q: 'Ромашка Север', page: '2' })).not.toBe(base);
    expect(key({ q: 'Ромашка Север', kind: 'companies' })).not.toBe(base);
    expect(key({ q: 'ромашка север' })).not.toBe(base); // case is kept (the answer echoes query)
  });

  it('keys suggest text the same way: as sent', () => {
    expect(cachePolicy('suggest', {}, { q: ' сбер  банк ' })?.key).not.toBe(
      cachePolicy('suggest', {}, { q: 'сбер банк' })?.key,
    );
    expect(normalizeQueryText('')).toBeUndefined();
    expect(normalizeQueryText('   ')).toBe('   ');
  });

  it('hashes long query text so keys stay short', () => {
    const key = cachePolicy('search', {}, { q: 'Общество с ограниченной ответственностью '.repeat(4) })!.key;
    expect(key.length).toBeLessThan(80);
  });

  it('keys are shared across apps (no app in the key)', () => {
    expect(cachePolicy('company', { inn: INN }, {})!.key).not.toMatch(/crm|app/);
  });

  it("per-company keys carry the INN as a segment, so Redis puts them in the company's slot", () => {
    for (const route of ['company', 'requisites', 'person'] as const) {
      expect(redisInnSegment(cachePolicy(route, { inn: INN }, {})!.key)).toBe(INN);
    }
    expect(
      redisInnSegment(cachePolicy('section', { inn: INN, section: 'taxes' }, { cursor: 'x' })!.key),
    ).toBe(INN);
  });

  it('tags entries by INN', () => {
    expect(innTag(INN)).toBe(`inn:${INN}`);
  });
});

describe('storableKind: which answers are stored', () => {
  const company = cachePolicy('company', { inn: INN }, {})!;
  const bank = cachePolicy('bank', { bic: '044525225' }, {})!;

  it('stores a 200', () => {
    expect(storableKind('company', company, 200, Buffer.from('{}'))).toBe('dossier');
  });

  it('stores a 404 not_found of company, requisites and person as a negative entry', () => {
    expect(storableKind('company', company, 404, notFoundBody())).toBe('negative');
    expect(
      storableKind('requisites', cachePolicy('requisites', { inn: INN }, {})!, 404, notFoundBody()),
    ).toBe('negative');
    expect(storableKind('person', cachePolicy('person', { inn: INN }, {})!, 404, notFoundBody())).toBe(
      'negative',
    );
  });

  it('does not store a 404 of other routes (unknown BIC, unknown check)', () => {
    expect(storableKind('bank', bank, 404, notFoundBody())).toBeNull();
  });

  it('does not store a 404 that is not not_found, or not JSON', () => {
    expect(storableKind('company', company, 404, errorBody('something_else'))).toBeNull();
    expect(storableKind('company', company, 404, Buffer.from('<html>'))).toBeNull();
  });

  it('never stores errors, refusals or check tickets', () => {
    for (const status of [202, 401, 402, 403, 409, 422, 429, 500, 502, 503, 504]) {
      expect(storableKind('company', company, status, errorBody('x')), String(status)).toBeNull();
    }
  });
});

describe('cache config', () => {
  it('defaults follow the design', () => {
    const config = resolveCacheConfig();
    expect(config.maxAgeMs).toEqual({
      dossier: 6 * H,
      requisites: 24 * H,
      bank: 24 * H,
      person: 24 * H,
      suggest: H,
      search: 10 * 60_000,
      check: 7 * 24 * H,
      negative: H,
    });
    expect(config.maxAgeMs).toEqual(DEFAULT_MAX_AGE_MS);
    expect(config.maxStaleMs).toBe(24 * H);
    expect(config.compression).toEqual({ encoding: 'br', level: 5, minBytes: 1024 });
  });

  it('per-app max ages apply to that app only', () => {
    const config = resolveCacheConfig({ perApp: { risk: { dossier: H } } });
    expect(maxAgeFor(config, 'dossier', 'risk')).toBe(H);
    expect(maxAgeFor(config, 'dossier', 'crm')).toBe(6 * H);
    expect(maxAgeFor(config, 'bank', 'risk')).toBe(24 * H);
  });

  it('entries are kept for the longest age any app accepts plus the stale allowance', () => {
    const config = resolveCacheConfig({ perApp: { archive: { dossier: 12 * H } }, maxStaleMs: 2 * H });
    expect(storageTtlMs(config, 'dossier')).toBe(14 * H);
    expect(storageTtlMs(config, 'search')).toBe(10 * 60_000 + 2 * H);
  });

  it('reports every bad setting at once', () => {
    try {
      resolveCacheConfig({
        maxAgeMs: { dossier: -1 },
        compression: { encoding: 'gzip', level: 11 },
        bogus: 1,
      } as never);
      expect.unreachable();
    } catch (error) {
      const text = String(error);
      expect(text).toContain('dossier');
      expect(text).toContain('level');
      expect(text).toContain('bogus');
    }
  });
});
