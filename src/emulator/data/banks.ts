// Bank directory records by BIC, modelled on the central bank's classifier: participant
// type and status (PSAC / PSDL), accounts (CRSA correspondent ...) and restrictions (URRS,
// LWRS ...) as {code, title, date}. Real banks from the fixtures; any other nine digits are
// a synthetic bank, unknown (404) by a stable rule, closed (status 'closed' + closed_on) by
// another.
import { completeCorrespondentAccount } from '../../domain/identifiers.ts';
import { BANK_FIXTURES, type BankFixture, CLOSED_BANK_BIC } from './fixtures.ts';
import { addDays, dateBetween, hash32, REFERENCE_DATE, Rng } from './prng.ts';
import type { Bank, BankAccount, BankRestriction, CodeTitle } from './types.ts';
import { NAME_WORDS, REGIONS, STREETS } from './vocab.ts';

const FIXTURES = new Map<string, BankFixture>(BANK_FIXTURES.map((b) => [b.bic, b]));
const REGISTRATION_NUMBERS: Record<string, string> = {
  '044525225': '1481',
  '044525187': '1000',
  '044525593': '1326',
  '044525974': '2673',
  '044525823': '354',
  '044525700': '3292',
  '044525985': '2209',
  '044030653': '1481',
};

export const PARTICIPANT_TYPES: Record<string, string> = {
  '00': 'Главное управление Банка России',
  '20': 'Кредитная организация',
  '30': 'Филиал кредитной организации',
  '52': 'Территориальный орган Федерального казначейства',
  '65': 'Иностранный банк',
};
export const PARTICIPANT_STATUSES = {
  PSAC: 'Действующий',
  PSDL: 'Исключен из справочника',
} as const;
export const ACCOUNT_TYPES: Record<string, string> = {
  CRSA: 'Корреспондентский счет',
  CBRA: 'Счет Банка России',
  BANA: 'Банковский счет',
  TRSA: 'Счет Федерального казначейства',
  UTRA: 'Единый казначейский счет',
  CLAC: 'Клиринговый счет',
};
export const RESTRICTIONS: Record<string, string> = {
  URRS: 'Ограничение предоставления сервиса срочного перевода',
  LWRS: 'Отзыв (аннулирование) лицензии',
  MRTR: 'Введение моратория на удовлетворение требований кредиторов',
  LMRS: 'Ограничение участия в расчетах (ограниченный режим счета)',
  CLRS: 'Закрытие счета',
  FPRS: 'Приостановление предоставления сервиса быстрых платежей',
};

const ct = (table: Record<string, string>, code: string): CodeTitle => ({ code, title: table[code]! });
const restriction = (code: string, date: string): BankRestriction => ({
  code,
  title: RESTRICTIONS[code]!,
  date,
});

/** Unknown BICs (404): FNV-1a of "bic:" + BIC mod 20 === 0, never a fixture or the fixed closed bank. */
export function isUnknownBic(bic: string): boolean {
  return !FIXTURES.has(bic) && bic !== CLOSED_BANK_BIC && hash32(`bic:${bic}`) % 20 === 0;
}

/** Closed banks: the fixed CLOSED_BANK_BIC, and FNV-1a of "bic:" + BIC mod 10 === 1 for synthetic BICs. */
export function isClosedBic(bic: string): boolean {
  return bic === CLOSED_BANK_BIC || (!FIXTURES.has(bic) && hash32(`bic:${bic}`) % 10 === 1);
}

function participantType(rng: Rng, bic: string): string {
  if (bic.startsWith('00')) return '52';
  if (bic.startsWith('10')) return '65';
  if (bic.endsWith('000')) return '00';
  return rng.chance(0.8) ? '20' : '30';
}

const LATIN: Record<string, string> = {
  а: 'a',
  б: 'b',
  в: 'v',
  г: 'g',
  д: 'd',
  е: 'e',
  ё: 'e',
  ж: 'zh',
  з: 'z',
  и: 'i',
  й: 'y',
  к: 'k',
  л: 'l',
  м: 'm',
  н: 'n',
  о: 'o',
  п: 'p',
  р: 'r',
  с: 's',
  т: 't',
  у: 'u',
  ф: 'f',
  х: 'kh',
  ц: 'ts',
  ч: 'ch',
  ш: 'sh',
  щ: 'shch',
  ъ: '',
  ы: 'y',
  ь: '',
  э: 'e',
  ю: 'yu',
  я: 'ya',
};
function transliterate(text: string): string {
  return [...text.toLowerCase()]
    .map((c) => LATIN[c] ?? c)
    .join('')
    .toUpperCase();
}

export function buildBank(seed: string, bic: string): Bank | null {
  if (isUnknownBic(bic)) return null;
  const rng = new Rng(`${seed}|bank|${bic}`);
  const fixture = FIXTURES.get(bic);
  const type = fixture
    ? bic === '044525000'
      ? '00'
      : bic === '044030653'
        ? '30'
        : '20'
    : participantType(rng, bic);
  const region = REGIONS.find((r) => r.okato === bic.slice(2, 4)) ?? REGIONS[0]!;
  const closed = isClosedBic(bic);
  const includedOn = dateBetween(rng, '1996-01-01', '2020-12-31');
  const closedOn = closed ? dateBetween(rng, '2021-01-01', '2025-12-01') : null;
  const word = rng.pick(NAME_WORDS);
  const name =
    fixture?.name ??
    (type === '52'
      ? `УФК по ${region.name}`
      : type === '00'
        ? `ГУ Банка России по ${region.name}`
        : `${type === '30' ? 'Филиал ' : ''}КБ "${word}" (АО)`);
  const englishName =
    fixture?.englishName ?? (type === '52' ? 'FEDERAL TREASURY' : `CB ${transliterate(word)} JSC`);
  const hasCorr = fixture ? fixture.correspondentAccount !== null : type === '20' || type === '30';
  const account = fixture
    ? fixture.correspondentAccount
    : hasCorr
      ? completeCorrespondentAccount(`301018100${bic.slice(2, 6)}0000${bic.slice(6)}`, bic)
      : null;
  const accountRestrictions: BankRestriction[] = closed ? [restriction('CLRS', closedOn!)] : [];
  const accounts: BankAccount[] = account
    ? [
        {
          account,
          type: ct(ACCOUNT_TYPES, 'CRSA'),
          status: closed ? { code: 'ACDL', title: 'Счет закрыт' } : { code: 'ACAC', title: 'Действующий' },
          opened_on: includedOn,
          restrictions: accountRestrictions,
        },
      ]
    : [];
  const restrictions: BankRestriction[] = [];
  if (closed) {
    const revoked = addDays(closedOn!, -rng.int(30, 120));
    restrictions.push(restriction('LWRS', revoked), restriction('URRS', revoked));
  } else if (!fixture && rng.chance(0.1)) {
    restrictions.push(
      restriction(rng.pick(['URRS', 'FPRS', 'LMRS']), dateBetween(rng, '2024-01-01', REFERENCE_DATE)),
    );
  }
  const street = rng.pick(STREETS);
  const house = String(rng.int(1, 60));
  const postal = `${region.postal}${rng.digits(6 - region.postal.length)}`;
  return {
    bic,
    name,
    english_name: englishName,
    correspondent_account: account,
    swift: fixture
      ? fixture.swift
      : type === '20' && rng.chance(0.5)
        ? [`${transliterate(word).slice(0, 4).padEnd(4, 'X')}RUMM`]
        : [],
    address: {
      postal_code: postal,
      region: region.name,
      locality_type: 'г',
      locality: region.city,
      street,
      house,
      full: `${postal}, ${region.name}, ${street}, д. ${house}`,
    },
    status: closed ? 'closed' : 'active',
    closed_on: closedOn,
    participant_status: ct(PARTICIPANT_STATUSES, closed ? 'PSDL' : 'PSAC'),
    participant_type: ct(PARTICIPANT_TYPES, type),
    registration_number:
      REGISTRATION_NUMBERS[bic] ?? (type === '20' || type === '30' ? String(rng.int(100, 3600)) : null),
    inn: fixture?.inn ?? null,
    restrictions,
    accounts,
    included_on: includedOn,
    directory_date: '2025-12-31',
  };
}
