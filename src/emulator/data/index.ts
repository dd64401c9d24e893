// The emulator's deterministic synthetic data source: the one API the emulator server
// imports. Everything is a pure function of (seed, input); companies are generated lazily
// and memoized in bounded LRU caches, including each dossier's serialized JSON so a cached
// dossier read costs a map lookup. Returned objects are shared: callers must not mutate them.
import { LRUCache } from 'lru-cache';
import { isValidInn } from '../../domain/identifiers.ts';
import type { SearchKind, SectionName } from '../../domain/requests.ts';
import { buildBank } from './banks.ts';
import { requisitesOf } from './company.ts';
import { buildCore, type CompanyCore, isUnknownInn } from './core.ts';
import { buildRecord, type CompanyRecord } from './dossier.ts';
import { buildNameIndex, type NameIndex } from './name-index.ts';
import { pageOf } from './paging.ts';
import { buildPerson } from './persons.ts';
import { search } from './search.ts';
import { suggest } from './suggest.ts';
import type { Bank, Dossier, Person, Requisites, SearchData, Suggestion } from './types.ts';
import { buildUniverse, type Universe } from './universe.ts';

export { isClosedBic, isUnknownBic } from './banks.ts';
export { isUnknownInn } from './core.ts';
export { DOSSIER_ABSENT_SECTIONS, DOSSIER_SECTIONS } from './dossier.ts';
export { CLOSED_BANK_BIC, PERSON_FIXTURE_INN } from './fixtures.ts';
export { PAGE_SIZE } from './paging.ts';
export { SEARCH_MAX_PAGE, SEARCH_PAGE_SIZE } from './search.ts';
export { SUGGEST_LIMIT } from './suggest.ts';
export type * from './types.ts';

export interface EmulatorDataOptions {
  /** Seed of the synthetic world; default 'cpgw'. */
  seed?: string;
  /** LRU capacities (entries); defaults suit a test or a demo. */
  cache?: { records?: number; dossierJson?: number; cores?: number; banks?: number };
}

export type SectionResult = { kind: 'ok'; body: unknown } | { kind: 'bad_cursor' };

export interface EmulatorData {
  readonly seed: string;
  /** null = unknown INN (404). The caller has validated the check digits. */
  dossier(inn: string): Dossier | null;
  /** The dossier serialized once and memoized: the fast path for the server. */
  dossierJson(inn: string): string | null;
  /** A section, or one page of a paged section ('' or undefined cursor = first page). */
  section(inn: string, name: SectionName, cursor?: string): SectionResult | null;
  requisites(inn: string): Requisites | null;
  bank(bic: string): Bank | null;
  person(inn: string): Person | null;
  suggest(q: string): Suggestion[];
  search(q: string, kind: SearchKind, page: number): SearchData;
  /** Builds the searchable universe now (it is otherwise built on first use). */
  warm(): void;
  /** INNs of the searchable universe, for tests and demos (fixtures first). */
  universeInns(): { legal: readonly string[]; individual: readonly string[]; persons: readonly string[] };
}

export function createEmulatorData(options: EmulatorDataOptions = {}): EmulatorData {
  const seed = options.seed ?? 'cpgw';
  const sizes = options.cache ?? {};
  let universe: Universe | undefined;
  let nameIndex: NameIndex | undefined;
  const cores = new LRUCache<string, CompanyCore>({ max: sizes.cores ?? 5000 });
  const records = new LRUCache<string, CompanyRecord>({ max: sizes.records ?? 64 });
  const jsons = new LRUCache<string, string>({ max: sizes.dossierJson ?? 256 });
  const banks = new LRUCache<string, Bank>({ max: sizes.banks ?? 2000 });

  const u = (): Universe => {
    universe ??= buildUniverse(seed);
    return universe;
  };
  const idx = (): NameIndex => {
    nameIndex ??= buildNameIndex(u());
    return nameIndex;
  };

  /** A company exists for the INN: not unknown, and not a natural person who is no sole proprietor. */
  const companyExists = (inn: string): boolean =>
    isValidInn(inn) && !isUnknownInn(inn) && !(inn.length === 12 && u().world.personPoolSet.has(inn));

  const coreOf = (inn: string): CompanyCore | null => {
    if (!companyExists(inn)) return null;
    const known = u().byInn.get(inn) ?? cores.get(inn);
    if (known) return known;
    const core = buildCore(u().world, inn);
    cores.set(inn, core);
    return core;
  };

  const recordOf = (inn: string): CompanyRecord | null => {
    const cached = records.get(inn);
    if (cached) return cached;
    const core = coreOf(inn);
    if (!core) return null;
    const record = buildRecord(u(), core);
    records.set(inn, record);
    return record;
  };

  return {
    seed,
    dossier: (inn) => recordOf(inn)?.dossier ?? null,
    dossierJson(inn) {
      const cached = jsons.get(inn);
      if (cached !== undefined) return cached;
      const record = recordOf(inn);
      if (!record) return null;
      const json = JSON.stringify(record.dossier);
      jsons.set(inn, json);
      return json;
    },
    section(inn, name, cursor) {
      const record = recordOf(inn);
      if (!record) return null;
      const content = record.sections[name];
      if (!content.paged) return cursor ? { kind: 'bad_cursor' } : { kind: 'ok', body: content.body };
      const page = pageOf(content.items, inn, name, cursor);
      return page ? { kind: 'ok', body: page } : { kind: 'bad_cursor' };
    },
    requisites(inn) {
      const core = coreOf(inn);
      return core ? requisitesOf(seed, core) : null;
    },
    bank(bic) {
      const cached = banks.get(bic);
      if (cached) return cached;
      const bank = buildBank(seed, bic);
      if (bank) banks.set(bic, bank);
      return bank;
    },
    person(inn) {
      if (!isValidInn(inn) || isUnknownInn(inn)) return null;
      const core = coreOf(inn);
      if (inn.length === 10 && !core) return null;
      return buildPerson(u(), inn, core);
    },
    suggest(q) {
      return suggest(idx(), q, fullInnOutsideUniverse(q));
    },
    search(q, kind, page) {
      return search(u(), idx(), q, kind, page, fullInnOutsideUniverse(q));
    },
    warm() {
      idx();
    },
    universeInns() {
      const all = u().companies;
      return {
        legal: all.filter((c) => c.type === 'legal').map((c) => c.inn),
        individual: all.filter((c) => c.type === 'individual').map((c) => c.inn),
        persons: u().world.personPool,
      };
    },
  };

  /** "A full number is also found": a valid INN outside the universe still appears. */
  function fullInnOutsideUniverse(q: string): CompanyCore | null {
    const t = q.trim();
    if (!/^(\d{10}|\d{12})$/.test(t) || u().byInn.has(t)) return null;
    return coreOf(t);
  }
}
