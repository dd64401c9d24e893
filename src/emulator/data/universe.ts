// The finite searchable universe: fixtures plus a deterministic set of synthetic legal
// entities, sole proprietors and natural persons, built once from the seed at start-up.
// Suggest, search, person affiliations, relations and neighbours are all answered from it;
// any other valid INN still has a dossier, it is just not indexed for name search.
import { completeInn } from '../../domain/identifiers.ts';
import { buildCore, type CompanyCore, isUnknownInn, type World } from './core.ts';
import { COMPANY_FIXTURES, PERSON_FIXTURE_INN, SOLE_PROPRIETOR_FIXTURES } from './fixtures.ts';
import { Rng } from './prng.ts';
import { REGIONS } from './vocab.ts';

export const UNIVERSE_SIZES = { legal: 2000, individual: 800, persons: 1500 } as const;

/** One affiliation of a person or an organization with a universe company. */
export interface Link {
  companyInn: string;
  role: 'head' | 'founder';
  post: string | null;
  percent: number | null;
  since: string;
}

export interface Universe {
  world: World;
  /** Universe companies in a stable order: legal fixtures, synthetic legal, sole proprietors. */
  companies: readonly CompanyCore[];
  byInn: ReadonlyMap<string, CompanyCore>;
  /** Affiliations by person INN (12 digits) or organization INN (10 digits, founder links only). */
  links: ReadonlyMap<string, readonly Link[]>;
  /** Legal universe companies grouped by region code + OKVED class (the "neighbors" analog). */
  byRegionActivity: ReadonlyMap<string, readonly string[]>;
}

function generateInns(rng: Rng, count: number, length: 10 | 12, taken: Set<string>, out: string[]): void {
  let made = 0;
  while (made < count) {
    const region = rng.pick(REGIONS).code;
    const prefix = length === 10 ? `${region}${rng.digits(7)}` : `${region}${rng.digits(8)}`;
    const inn = completeInn(prefix);
    if (taken.has(inn) || isUnknownInn(inn) || /^0+$/.test(inn)) continue;
    taken.add(inn);
    out.push(inn);
    made++;
  }
}

export function regionActivityKey(core: CompanyCore): string {
  return `${core.region.code}|${core.okved.code.slice(0, 2)}`;
}

export function buildUniverse(seed: string): Universe {
  const taken = new Set<string>([
    ...COMPANY_FIXTURES.map((f) => f.inn),
    ...SOLE_PROPRIETOR_FIXTURES.map((f) => f.inn),
    PERSON_FIXTURE_INN,
  ]);
  const persons: string[] = [PERSON_FIXTURE_INN];
  generateInns(new Rng(`${seed}|universe|persons`), UNIVERSE_SIZES.persons - 1, 12, taken, persons);
  const legal: string[] = COMPANY_FIXTURES.map((f) => f.inn);
  generateInns(new Rng(`${seed}|universe|legal`), UNIVERSE_SIZES.legal, 10, taken, legal);
  const individual: string[] = SOLE_PROPRIETOR_FIXTURES.map((f) => f.inn);
  generateInns(new Rng(`${seed}|universe|individual`), UNIVERSE_SIZES.individual, 12, taken, individual);

  const world: World = { seed, personPool: persons, personPoolSet: new Set(persons), legalInns: legal };
  const companies = [...legal, ...individual].map((inn) => buildCore(world, inn));
  const byInn = new Map(companies.map((c) => [c.inn, c]));

  const links = new Map<string, Link[]>();
  const add = (inn: string, link: Link) => {
    const list = links.get(inn);
    if (list) list.push(link);
    else links.set(inn, [link]);
  };
  const byRegionActivity = new Map<string, string[]>();
  for (const c of companies) {
    if (c.type !== 'legal') continue;
    for (const h of c.heads)
      add(h.inn, { companyInn: c.inn, role: 'head', post: h.post, percent: null, since: h.since });
    for (const f of c.founders) {
      add(f.inn, {
        companyInn: c.inn,
        role: 'founder',
        post: null,
        percent: f.share.percent,
        since: f.since,
      });
    }
    const key = regionActivityKey(c);
    const group = byRegionActivity.get(key);
    if (group) group.push(c.inn);
    else byRegionActivity.set(key, [c.inn]);
  }
  return { world, companies, byInn, links, byRegionActivity };
}
