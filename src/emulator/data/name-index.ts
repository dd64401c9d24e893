// The word index over the universe that suggest and search scan: short-name words (suggest
// indexes only the short name), full-name words (search also looks there) and the natural
// persons' full names. Also the shared ranking and the digits-prefix lookup.
import type { CompanyCore } from './core.ts';
import { digitsQuery, matchesWordStarts, words } from './matching.ts';
import { personName } from './names.ts';
import type { Universe } from './universe.ts';

export interface IndexedCompany {
  core: CompanyCore;
  shortWords: string[];
  fullWords: string[];
}

export interface IndexedPerson {
  inn: string;
  fullName: string;
  words: string[];
}

export interface NameIndex {
  companies: IndexedCompany[];
  persons: IndexedPerson[];
}

export function buildNameIndex(universe: Universe): NameIndex {
  return {
    companies: universe.companies.map((core) => ({
      core,
      shortWords: words(core.nameShort),
      fullWords: words(core.nameFull),
    })),
    persons: universe.world.personPool.map((inn) => {
      const fullName = personName(universe.world.seed, inn).full;
      return { inn, fullName, words: words(fullName) };
    }),
  };
}

/** Stable ranking: exact number hits, then word-for-word hits, active first, fixtures first, shorter names, INN. */
export function rankCompanies(list: CompanyCore[], q: string): CompanyCore[] {
  const qWords = words(q);
  const digits = digitsQuery(q);
  const key = (c: CompanyCore) => {
    const exact = digits !== null && (c.inn === digits || c.ogrn === digits) ? 0 : 1;
    const nameWords = words(c.nameShort);
    const whole = qWords.every((w) => nameWords.includes(w)) ? 0 : 1;
    return [exact, whole, c.status.code === 'ACTIVE' ? 0 : 1, c.fixture ? 0 : 1, c.nameShort.length];
  };
  const keyed = list.map((c) => ({ c, k: key(c) }));
  keyed.sort((a, b) => {
    for (let i = 0; i < a.k.length; i++) if (a.k[i] !== b.k[i]) return a.k[i]! - b.k[i]!;
    return a.c.inn < b.c.inn ? -1 : a.c.inn > b.c.inn ? 1 : 0;
  });
  return keyed.map((x) => x.c);
}

/**
 * Companies matching `q`: a digits query matches the start of an INN or OGRN; otherwise the
 * word starts of the short name (plus the full name when `fullName`). `extra` adds a
 * company outside the universe found by its full INN.
 */
export function matchCompanies(
  index: NameIndex,
  q: string,
  fullName: boolean,
  extra: CompanyCore | null,
): CompanyCore[] {
  const digits = digitsQuery(q);
  const out: CompanyCore[] = [];
  if (digits !== null) {
    for (const { core } of index.companies) {
      if (core.inn.startsWith(digits) || core.ogrn.startsWith(digits)) out.push(core);
    }
  } else {
    const qWords = words(q);
    for (const c of index.companies) {
      if (matchesWordStarts(qWords, c.shortWords) || (fullName && matchesWordStarts(qWords, c.fullWords))) {
        out.push(c.core);
      }
    }
  }
  if (extra && !out.some((c) => c.inn === extra.inn)) out.push(extra);
  return rankCompanies(out, q);
}

export function matchPersons(index: NameIndex, q: string): IndexedPerson[] {
  const digits = digitsQuery(q);
  if (digits !== null) return index.persons.filter((p) => p.inn.startsWith(digits));
  const qWords = words(q);
  return index.persons
    .filter((p) => matchesWordStarts(qWords, p.words))
    .sort((a, b) => (a.fullName < b.fullName ? -1 : a.fullName > b.fullName ? 1 : a.inn < b.inn ? -1 : 1));
}
