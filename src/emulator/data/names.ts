// Names, identifiers and codes derived from (seed, INN) alone, each from its own PRNG
// stream, so any generator can name a founder or a counterparty without building that
// company's whole record (and without recursion between companies).
import { completeOgrn } from '../../domain/identifiers.ts';
import { COMPANY_FIXTURES, type CompanyFixture } from './fixtures.ts';
import { hash32, Rng } from './prng.ts';
import {
  FIRST_F,
  FIRST_M,
  LEGAL_FORMS,
  type LegalForm,
  NAME_SUFFIXES,
  NAME_WORDS,
  PATRONYMIC_BASE,
  type Region,
  regionByCode,
  SURNAMES_M,
} from './vocab.ts';

const FIXTURES = new Map<string, CompanyFixture>(COMPANY_FIXTURES.map((f) => [f.inn, f]));

export function companyFixture(inn: string): CompanyFixture | undefined {
  return FIXTURES.get(inn);
}

export interface PersonName {
  full: string;
  surname: string;
  female: boolean;
}

/** A natural person's full name (Фамилия Имя Отчество) from (seed, INN). */
export function personName(seed: string, inn: string): PersonName {
  const rng = new Rng(`${seed}|${inn}|person`);
  const female = rng.chance(0.4);
  const base = rng.pick(SURNAMES_M);
  const surname = female ? `${base}а` : base;
  const first = female ? rng.pick(FIRST_F) : rng.pick(FIRST_M);
  const patronymic = `${rng.pick(PATRONYMIC_BASE)}${female ? 'на' : 'ич'}`;
  return { full: `${surname} ${first} ${patronymic}`, surname, female };
}

export interface LegalName {
  form: LegalForm;
  short: string;
  full: string;
}

/** A legal entity's short and full name (fixtures keep their real names). */
export function legalName(seed: string, inn: string): LegalName {
  const fixture = FIXTURES.get(inn);
  if (fixture) {
    const form = LEGAL_FORMS.find((f) => f.okopf === fixture.okopf) ?? LEGAL_FORMS[2]!;
    return { form, short: fixture.nameShort, full: fixture.nameFull };
  }
  const rng = new Rng(`${seed}|${inn}|name`);
  const roll = rng.next();
  const form = roll < 0.8 ? LEGAL_FORMS[0]! : roll < 0.95 ? LEGAL_FORMS[1]! : LEGAL_FORMS[2]!;
  const word = rng.pick(NAME_WORDS);
  const pattern = rng.next();
  let core: string;
  if (pattern < 0.3) core = word;
  else if (pattern < 0.55) core = `${word}-${rng.pick(NAME_SUFFIXES)}`;
  else if (pattern < 0.72) core = `${word} ${rng.pick(NAME_SUFFIXES)}`;
  else if (pattern < 0.87) core = `ТД ${rng.pick(SURNAMES_M).toUpperCase()}`;
  else core = `${rng.pick(NAME_SUFFIXES)}${rng.pick(['', 'ЦЕНТР', 'МАРКЕТ', 'ЛАЙН'])} ${word}`.trim();
  return { form, short: `${form.short} "${core}"`, full: `${form.full} "${core}"` };
}

/** Short and full name of any company (legal or sole proprietor). */
export function companyNames(seed: string, inn: string): { short: string; full: string } {
  if (inn.length === 12) {
    const person = personName(seed, inn);
    return { short: `ИП ${person.full}`, full: `Индивидуальный предприниматель ${person.full}` };
  }
  const name = legalName(seed, inn);
  return { short: name.short, full: name.full };
}

export function regionOf(inn: string): Region {
  return regionByCode(inn.slice(0, 2));
}

export interface Registration {
  ogrn: string;
  ogrnDate: string;
  registeredOn: string;
}

const EGRUL_START = '2002-07-01';

/** OGRN (OGRNIP for 12-digit INNs) and registration dates. Fixtures keep their real OGRN. */
export function registrationOf(seed: string, inn: string, fixedOgrn?: string): Registration {
  const rng = new Rng(`${seed}|${inn}|reg`);
  const fixture = FIXTURES.get(inn);
  const region = inn.slice(0, 2);
  if (fixture) {
    const ogrnYear = 2000 + Number(fixture.ogrn.slice(1, 3));
    const ogrnDate = `${ogrnYear}-${String(rng.int(8, 12)).padStart(2, '0')}-${String(rng.int(1, 28)).padStart(2, '0')}`;
    return { ogrn: fixture.ogrn, ogrnDate, registeredOn: fixture.registeredOn };
  }
  const year = rng.int(2003, 2024);
  const date = `${year}-${String(rng.int(1, 12)).padStart(2, '0')}-${String(rng.int(1, 28)).padStart(2, '0')}`;
  const yy = String(year % 100).padStart(2, '0');
  if (inn.length === 12) {
    const ogrn = fixedOgrn || completeOgrn(`3${yy}${region}${rng.digits(9)}`);
    const ogrnYear = 2000 + Number(ogrn.slice(1, 3));
    const registeredOn = fixedOgrn ? `${ogrnYear}-${date.slice(5)}` : date;
    return { ogrn, ogrnDate: registeredOn, registeredOn };
  }
  const ogrn = completeOgrn(`1${yy}${region}${rng.digits(7)}`);
  return { ogrn, ogrnDate: date < EGRUL_START ? EGRUL_START : date, registeredOn: date };
}

/** KPP: tax office of the INN + reason 01 + serial 001 (fixtures keep theirs). Null for a sole proprietor. */
export function kppOf(inn: string): string | null {
  if (inn.length === 12) return null;
  return FIXTURES.get(inn)?.kpp ?? `${inn.slice(0, 4)}01001`;
}

/** OKPO with its check digit (8 digits legal, 10 digits sole proprietor). */
export function okpoOf(seed: string, inn: string): string {
  const h = hash32(`${seed}|${inn}|okpo`);
  const rest = String(h % (inn.length === 12 ? 100_000_000 : 1_000_000)).padStart(
    inn.length === 12 ? 8 : 6,
    '0',
  );
  const body = `${1 + (h % 9)}${rest}`;
  return body + okpoCheckDigit(body);
}

function okpoCheckDigit(body: string): number {
  const sum = (offset: number) => {
    let s = 0;
    for (let i = 0; i < body.length; i++) s += Number(body[i]) * (((i + offset) % 10) + 1);
    return s % 11;
  };
  let d = sum(0);
  if (d === 10) d = sum(2);
  return d === 10 ? 0 : d;
}

/** Deterministic 0..n-1 bucket of (seed, inn, topic) without building a PRNG. */
export function bucket(seed: string, inn: string, topic: string, n: number): number {
  return hash32(`${seed}|${inn}|${topic}`) % n;
}
