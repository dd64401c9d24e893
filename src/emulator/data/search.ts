// Registry search (GET /v1/search): groups `companies`, `entrepreneurs` and `persons`, 10
// items a page, pages 1..20. kind=all answers the first page of every group; any other
// kind answers just its own group at the requested page. Names match by word starts of
// the short or full name; digits match the start of an INN (and OGRN for companies).
import type { SearchKind } from '../../domain/requests.ts';
import type { CompanyCore } from './core.ts';
import { matchCompanies, matchPersons, type NameIndex } from './name-index.ts';
import { countRoles } from './persons.ts';
import type { SearchData, SearchGroup, SearchItem } from './types.ts';
import type { Universe } from './universe.ts';

export const SEARCH_PAGE_SIZE = 10;
export const SEARCH_MAX_PAGE = 20;

function companyItem(core: CompanyCore): SearchItem {
  const head = core.heads[0];
  return {
    kind: core.type === 'legal' ? 'company' : 'entrepreneur',
    inn: core.inn,
    ogrn: core.ogrn,
    kpp: core.kpp,
    name: core.nameShort,
    name_full: core.nameFull,
    status: core.status,
    region: core.region.name,
    address: core.address?.full ?? null,
    registered_on: core.registeredOn,
    head: head ? { full_name: head.full_name, post: head.post } : null,
  };
}

function group<T>(all: readonly T[], page: number, toItem: (t: T) => SearchItem): SearchGroup {
  const start = (page - 1) * SEARCH_PAGE_SIZE;
  return {
    total: all.length,
    has_more: start + SEARCH_PAGE_SIZE < all.length && page < SEARCH_MAX_PAGE,
    items: all.slice(start, start + SEARCH_PAGE_SIZE).map(toItem),
  };
}

export function search(
  universe: Universe,
  index: NameIndex,
  q: string,
  kind: SearchKind,
  page: number,
  byFullInn: CompanyCore | null,
): SearchData {
  const p = kind === 'all' ? 1 : Math.min(Math.max(1, Math.floor(page) || 1), SEARCH_MAX_PAGE);
  const groups: SearchData['groups'] = {};
  const wantCompanies = kind === 'all' || kind === 'companies';
  const wantEntrepreneurs = kind === 'all' || kind === 'entrepreneurs';
  if (wantCompanies || wantEntrepreneurs) {
    const matches = matchCompanies(index, q, true, byFullInn);
    if (wantCompanies)
      groups.companies = group(
        matches.filter((c) => c.type === 'legal'),
        p,
        companyItem,
      );
    if (wantEntrepreneurs) {
      groups.entrepreneurs = group(
        matches.filter((c) => c.type === 'individual'),
        p,
        companyItem,
      );
    }
  }
  if (kind === 'all' || kind === 'persons') {
    groups.persons = group(matchPersons(index, q), p, (person) => {
      const counts = countRoles(
        (universe.links.get(person.inn) ?? []).map((l) => ({ role: l.role, inn: l.companyInn })),
      );
      return {
        kind: 'person',
        inn: person.inn,
        full_name: person.fullName,
        head_count: counts.head,
        founder_count: counts.founder,
      };
    });
  }
  return { query: q, kind, groups };
}
