// Type-ahead suggestions (GET /v1/suggest): at most 10 items, up to seven companies first,
// then sole proprietors, then the remaining companies. Only the short name is indexed.
// Rows "not yet in the database" (a stable 1 in 12) lack kpp, address and status and carry
// heads null; a sole proprietor never has an address or a kpp.
import type { CompanyCore } from './core.ts';
import { matchCompanies, type NameIndex } from './name-index.ts';
import type { Suggestion } from './types.ts';

export const SUGGEST_LIMIT = 10;
export const SUGGEST_COMPANIES_FIRST = 7;

export function suggestionOf(core: CompanyCore): Suggestion {
  if (core.notInDb) {
    return {
      inn: core.inn,
      type: core.type,
      ogrn: core.ogrn,
      name: core.nameShort,
      name_full: core.nameFull,
      heads: null,
    };
  }
  // Key order as in the spec: inn, type, kpp, ogrn, name, name_full, address, then status, heads.
  return {
    inn: core.inn,
    type: core.type,
    ...(core.kpp ? { kpp: core.kpp } : {}),
    ogrn: core.ogrn,
    name: core.nameShort,
    name_full: core.nameFull,
    ...(core.address ? { address: core.address.full } : {}),
    status: core.status,
    heads: core.heads.map((h) => ({ inn: h.inn, full_name: h.full_name, post: h.post })),
  };
}

/** Orders matches: up to seven legal entities, then sole proprietors, then the other legal entities. */
export function orderSuggestions(matches: readonly CompanyCore[]): CompanyCore[] {
  const legal = matches.filter((c) => c.type === 'legal');
  const individual = matches.filter((c) => c.type === 'individual');
  return [
    ...legal.slice(0, SUGGEST_COMPANIES_FIRST),
    ...individual,
    ...legal.slice(SUGGEST_COMPANIES_FIRST),
  ].slice(0, SUGGEST_LIMIT);
}

export function suggest(index: NameIndex, q: string, byFullInn: CompanyCore | null): Suggestion[] {
  return orderSuggestions(matchCompanies(index, q, false, byFullInn)).map(suggestionOf);
}
