// Person records: the affiliations of a natural person (12-digit INN) or of an organization
// that is a founder (10-digit INN), read from the universe's link index, so every listed
// company is a real, resolvable INN whose dossier names the person back.
import type { CompanyCore } from './core.ts';
import { personName } from './names.ts';
import type { Person, PersonCompany } from './types.ts';
import type { Link, Universe } from './universe.ts';

const ROLE_TITLES = {
  head: 'Руководитель',
  founder: 'Учредитель',
  entrepreneur: 'Индивидуальный предприниматель',
} as const;

function entry(core: CompanyCore, link: Link): PersonCompany {
  return {
    inn: core.inn,
    ogrn: core.ogrn,
    role: link.role,
    role_title: ROLE_TITLES[link.role],
    name_short: core.nameShort,
    name_full: core.nameFull,
    type: core.type,
    status: core.status,
    post: link.post,
    share_percent: link.percent,
    since: link.since,
  };
}

export function countRoles(companies: readonly { role: string; inn: string }[]): {
  head: number;
  founder: number;
} {
  const heads = new Set<string>();
  const founders = new Set<string>();
  for (const c of companies) {
    if (c.role === 'head') heads.add(c.inn);
    if (c.role === 'founder') founders.add(c.inn);
  }
  return { head: heads.size, founder: founders.size };
}

/**
 * Builds the person record. `core` is the company with this INN when one exists (a sole
 * proprietor for 12 digits, the organization for 10), null for a natural person who is not
 * a sole proprietor. The caller has ruled out unknown INNs.
 */
export function buildPerson(universe: Universe, inn: string, core: CompanyCore | null): Person {
  const links = universe.links.get(inn) ?? [];
  const companies = links.map((l) => entry(universe.byInn.get(l.companyInn)!, l));
  const counts = countRoles(companies);
  if (inn.length === 10) {
    return {
      inn,
      kind: 'legal',
      full_name: core?.nameFull ?? inn,
      ogrn: core?.ogrn ?? null,
      head_count: counts.head,
      founder_count: counts.founder,
      companies,
    };
  }
  if (core) {
    companies.unshift(
      entry(core, { companyInn: inn, role: 'head', post: null, percent: null, since: core.registeredOn }),
    );
    companies[0]!.role = 'entrepreneur';
    companies[0]!.role_title = ROLE_TITLES.entrepreneur;
    companies[0]!.post = 'Индивидуальный предприниматель';
  }
  return {
    inn,
    kind: 'individual',
    full_name: personName(universe.world.seed, inn).full,
    ogrn: null,
    head_count: counts.head,
    founder_count: counts.founder,
    companies,
  };
}
