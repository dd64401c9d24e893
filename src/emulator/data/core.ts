// The identity of one company (the part suggest, search, requisites and person records
// need): names, OGRN, KPP, status, dates, address, heads, founders, size. Cheap enough to
// build for the whole searchable universe at start-up. The full dossier builds on it.
import { COMPANY_FIXTURES, SOLE_PROPRIETOR_FIXTURES } from './fixtures.ts';
import { rublesFromKopecks } from './money.ts';
import {
  bucket,
  companyFixture,
  companyNames,
  kppOf,
  legalName,
  okpoOf,
  personName,
  regionOf,
  registrationOf,
} from './names.ts';
import { dateBetween, hash32, REFERENCE_DATE, Rng } from './prng.ts';
import type { Address, CompanyStatus, CompanyType, Founder, Head, StatusCode } from './types.ts';
import {
  COMPANY_STATUSES,
  HEAD_POSTS,
  type LegalForm,
  OKVEDS,
  type Okved,
  type Region,
  SOLE_PROPRIETOR_FORM,
  SOLE_PROPRIETOR_STATUSES,
  STREETS,
} from './vocab.ts';

/** What every generator may draw on: the seed and the finite pools companies link to. */
export interface World {
  seed: string;
  /** INNs of natural persons (12 digits) who head and found companies. */
  personPool: readonly string[];
  personPoolSet: ReadonlySet<string>;
  /** INNs of legal entities in the searchable universe (fixtures first); organization founders come from here. */
  legalInns: readonly string[];
}

export interface CompanyCore {
  inn: string;
  type: CompanyType;
  ogrn: string;
  ogrnDate: string;
  kpp: string | null;
  okpo: string;
  nameShort: string;
  nameFull: string;
  form: LegalForm;
  region: Region;
  status: CompanyStatus;
  registeredOn: string;
  liquidatedOn: string | null;
  okved: Okved;
  /** Null for a sole proprietor: the home address is hidden. */
  address: Address | null;
  heads: Head[];
  founders: Founder[];
  /** Charter capital in kopecks (null for a sole proprietor). */
  capitalKopecks: bigint | null;
  /** 0 micro .. 3 large, 4 for the fixtures. */
  scale: number;
  employees: number;
  fixture: boolean;
  /** Suggest rows "not yet in the database": no kpp, address, status; heads null. */
  notInDb: boolean;
  arbitrationCases: number;
}

const SYNTHETIC_OKVEDS = OKVEDS.slice(0, 18);
const EMPLOYEES: readonly [number, number][] = [
  [0, 15],
  [16, 100],
  [101, 250],
  [251, 5000],
];

const FIXTURE_INNS: ReadonlySet<string> = new Set([
  ...COMPANY_FIXTURES.map((f) => f.inn),
  ...SOLE_PROPRIETOR_FIXTURES.map((f) => f.inn),
]);

export function isFixtureInn(inn: string): boolean {
  return FIXTURE_INNS.has(inn);
}

/**
 * The stable unknown rule (seed-independent so gateway tests can rely on it): FNV-1a of the
 * INN mod 20 === 0 means no register knows it (404). Never true for a fixture.
 */
export function isUnknownInn(inn: string): boolean {
  return !FIXTURE_INNS.has(inn) && hash32(inn) % 20 === 0;
}

function statusOf(rng: Rng, type: CompanyType, fixture: boolean): StatusCode {
  if (fixture) return 'ACTIVE';
  const r = rng.next();
  if (r < 0.8) return 'ACTIVE';
  if (r < 0.88) return 'LIQUIDATED';
  if (r < 0.92) return 'LIQUIDATING';
  if (r < 0.96) return 'BANKRUPT';
  return type === 'legal' ? 'REORGANIZING' : 'ACTIVE';
}

export function statusObject(code: StatusCode, type: CompanyType): CompanyStatus {
  return { code, title: type === 'legal' ? COMPANY_STATUSES[code] : SOLE_PROPRIETOR_STATUSES[code] };
}

function addressOf(rng: Rng, region: Region): Address {
  const postal = `${region.postal}${rng.digits(6 - region.postal.length)}`;
  const street = rng.pick(STREETS);
  const house = String(rng.int(1, 120)) + (rng.chance(0.2) ? `, стр. ${rng.int(1, 9)}` : '');
  const office = rng.chance(0.7) ? String(rng.int(1, 40) * (rng.chance(0.5) ? 1 : 10)) : null;
  const locality = region.city;
  const cityPart = region.name.startsWith('г. ') ? '' : `, г. ${locality}`;
  const full = `${postal}, ${region.name}${cityPart}, ${street}, д. ${house}${office ? `, помещ. ${office}` : ''}`;
  return { postal_code: postal, region: region.name, locality, street, house, office, full };
}

function splitPercents(rng: Rng, n: number): number[] {
  if (n === 1) return [100];
  const weights = Array.from({ length: n }, () => rng.int(1, 10));
  const total = weights.reduce((a, b) => a + b, 0);
  const out = weights.map((w) => Math.max(1, Math.floor((w * 100) / total)));
  out[0]! += 100 - out.reduce((a, b) => a + b, 0);
  return out;
}

function headsOf(rng: Rng, world: World, registeredOn: string, fixture: boolean): Head[] {
  const count = fixture ? 2 : rng.chance(0.85) ? 1 : rng.chance(0.8) ? 2 : 3;
  const persons = rng.sample(world.personPool, count);
  return persons.map((personInn, i) => ({
    inn: personInn,
    full_name: personName(world.seed, personInn).full,
    post: i === 0 ? rng.pick(HEAD_POSTS) : rng.pick(['Управляющий', 'Исполнительный директор', 'Президент']),
    since:
      i === 0
        ? dateBetween(rng, registeredOn, REFERENCE_DATE)
        : dateBetween(rng, '2021-03-01', REFERENCE_DATE),
    disqualified: !fixture && rng.chance(0.02),
  }));
}

function foundersOf(
  rng: Rng,
  world: World,
  inn: string,
  heads: Head[],
  capital: bigint,
  registeredOn: string,
): Founder[] {
  const n = rng.int(1, 3);
  const percents = splitPercents(rng, n);
  const founders: Founder[] = [];
  const used = new Set<string>([inn]);
  for (let i = 0; i < n; i++) {
    let kind: 'person' | 'legal' = rng.chance(0.25) ? 'legal' : 'person';
    let founderInn: string;
    if (i === 0 && kind === 'person' && heads[0] && rng.chance(0.5)) founderInn = heads[0].inn;
    else if (kind === 'legal') founderInn = rng.pick(world.legalInns);
    else founderInn = rng.pick(world.personPool);
    if (used.has(founderInn)) {
      kind = 'person';
      founderInn = rng.pick(world.personPool);
      if (used.has(founderInn)) continue;
    }
    used.add(founderInn);
    const percent = percents[i]!;
    founders.push({
      kind,
      inn: founderInn,
      ogrn: kind === 'legal' ? registrationOf(world.seed, founderInn).ogrn : null,
      name:
        kind === 'legal' ? legalName(world.seed, founderInn).short : personName(world.seed, founderInn).full,
      share: { nominal: rublesFromKopecks((capital * BigInt(percent)) / 100n), percent },
      since: dateBetween(rng, registeredOn, REFERENCE_DATE),
    });
  }
  return founders;
}

/** Builds a company's identity. The caller has checked the INN is valid and not unknown. */
export function buildCore(world: World, inn: string): CompanyCore {
  const { seed } = world;
  const type: CompanyType = inn.length === 12 ? 'individual' : 'legal';
  const fixture = FIXTURE_INNS.has(inn);
  const legalFixture = companyFixture(inn);
  const spFixture = SOLE_PROPRIETOR_FIXTURES.find((f) => f.inn === inn);
  const rng = new Rng(`${seed}|${inn}|core`);
  const reg = registrationOf(seed, inn, spFixture?.ogrn);
  const legal = type === 'legal' ? legalName(seed, inn) : null;
  const names = legal ?? companyNames(seed, inn);
  const region = regionOf(inn);
  const statusCode = statusOf(rng, type, fixture);
  const liquidatedOn =
    statusCode === 'LIQUIDATED' ? dateBetween(rng, reg.registeredOn, REFERENCE_DATE) : null;
  const okved = legalFixture
    ? (OKVEDS.find((o) => o.code === legalFixture.okved) ?? OKVEDS[0]!)
    : rng.pick(SYNTHETIC_OKVEDS);
  const scale = legalFixture
    ? 4
    : type === 'individual'
      ? rng.int(0, 1)
      : rng.pick([0, 0, 0, 0, 1, 1, 1, 2, 2, 3]);
  const [lo, hi] = legalFixture ? [20_000, 250_000] : EMPLOYEES[Math.min(scale, 3)]!;
  const employees = rng.int(lo, hi);
  const address = type === 'legal' ? addressOf(rng, region) : null;
  let heads: Head[];
  let founders: Founder[] = [];
  let capitalKopecks: bigint | null = null;
  if (type === 'individual') {
    heads = [
      {
        inn,
        full_name: personName(seed, inn).full,
        post: 'Индивидуальный предприниматель',
        since: reg.registeredOn,
        disqualified: false,
      },
    ];
  } else {
    heads = headsOf(rng, world, reg.registeredOn, fixture);
    capitalKopecks = legalFixture
      ? rng.bigAmount(12, 14) * 100n
      : rng.chance(0.6)
        ? 1_000_000n
        : rng.bigAmount(5, 9 + scale) * 100n;
    founders = foundersOf(rng, world, inn, heads, capitalKopecks, reg.registeredOn);
  }
  const arbitrationCases = legalFixture
    ? legalFixture.arbitrationCases
    : bucket(seed, inn, 'arbitration-long', 10) === 0
      ? rng.int(101, 420)
      : rng.int(0, 12 + scale * 10);
  return {
    inn,
    type,
    ogrn: reg.ogrn,
    ogrnDate: reg.ogrnDate,
    kpp: kppOf(inn),
    okpo: okpoOf(seed, inn),
    nameShort: names.short,
    nameFull: names.full,
    form: legal?.form ?? SOLE_PROPRIETOR_FORM,
    region,
    status: statusObject(statusCode, type),
    registeredOn: reg.registeredOn,
    liquidatedOn,
    okved,
    address,
    heads,
    founders,
    capitalKopecks,
    scale,
    employees,
    fixture,
    notInDb: !fixture && bucket(seed, inn, 'db', 12) === 0,
    arbitrationCases,
  };
}
