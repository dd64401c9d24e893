// Real public facts the emulator must reproduce exactly (../shared/upstream/reference-data.md):
// well-known companies with INN, OGRN, real Russian names and given KPPs; real banks with BIC,
// correspondent account and SWIFT; synthetic but checksum-valid sole proprietors and a person.

export interface CompanyFixture {
  inn: string;
  ogrn: string;
  kpp: string;
  nameShort: string;
  nameFull: string;
  /** Index into LEGAL_FORMS-like okopf: ООО / АО / ПАО and friends. */
  okopf: string;
  okopfName: string;
  registeredOn: string;
  okved: string;
  /** Number of arbitration cases (long sections span several pages of 100). */
  arbitrationCases: number;
}

const PAO = { okopf: '12247', okopfName: 'Публичные акционерные общества' };
const AO = { okopf: '12267', okopfName: 'Непубличные акционерные общества' };
const OOO = { okopf: '12300', okopfName: 'Общества с ограниченной ответственностью' };

export const COMPANY_FIXTURES: readonly CompanyFixture[] = [
  {
    inn: '7707083893',
    ogrn: '1027700132195',
    kpp: '773601001',
    nameShort: 'ПАО СБЕРБАНК',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "СБЕРБАНК РОССИИ"',
    ...PAO,
    registeredOn: '1991-06-20',
    okved: '64.19',
    arbitrationCases: 264,
  },
  {
    inn: '7736050003',
    ogrn: '1027700070518',
    kpp: '773601001',
    nameShort: 'ПАО "ГАЗПРОМ"',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "ГАЗПРОМ"',
    ...PAO,
    registeredOn: '1993-02-25',
    okved: '06.10',
    arbitrationCases: 140,
  },
  {
    inn: '7736207543',
    ogrn: '1027700229193',
    kpp: '770401001',
    nameShort: 'ООО "ЯНДЕКС"',
    nameFull: 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ "ЯНДЕКС"',
    ...OOO,
    registeredOn: '2000-09-22',
    okved: '63.11',
    arbitrationCases: 120,
  },
  {
    inn: '7706107510',
    ogrn: '1027700043502',
    kpp: '770601001',
    nameShort: 'ПАО "НК "РОСНЕФТЬ"',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "НЕФТЯНАЯ КОМПАНИЯ "РОСНЕФТЬ"',
    ...PAO,
    registeredOn: '1995-12-07',
    okved: '06.10',
    arbitrationCases: 90,
  },
  {
    inn: '7708004767',
    ogrn: '1027700035769',
    kpp: '770801001',
    nameShort: 'ПАО "ЛУКОЙЛ"',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "НЕФТЯНАЯ КОМПАНИЯ "ЛУКОЙЛ"',
    ...PAO,
    registeredOn: '1993-04-22',
    okved: '06.10',
    arbitrationCases: 80,
  },
  {
    inn: '7702070139',
    ogrn: '1027739609391',
    kpp: '770201001',
    nameShort: 'БАНК ВТБ (ПАО)',
    nameFull: 'БАНК ВТБ (ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО)',
    ...PAO,
    registeredOn: '1990-10-17',
    okved: '64.19',
    arbitrationCases: 210,
  },
  {
    inn: '7728168971',
    ogrn: '1027700067328',
    kpp: '770801001',
    nameShort: 'АО "АЛЬФА-БАНК"',
    nameFull: 'АКЦИОНЕРНОЕ ОБЩЕСТВО "АЛЬФА-БАНК"',
    ...AO,
    registeredOn: '1990-12-20',
    okved: '64.19',
    arbitrationCases: 180,
  },
  {
    inn: '7710140679',
    ogrn: '1027739642281',
    kpp: '771301001',
    nameShort: 'АО "ТБАНК"',
    nameFull: 'АКЦИОНЕРНОЕ ОБЩЕСТВО "ТБАНК"',
    ...AO,
    registeredOn: '1994-06-28',
    okved: '64.19',
    arbitrationCases: 150,
  },
  {
    inn: '7740000076',
    ogrn: '1027700149124',
    kpp: '770901001',
    nameShort: 'ПАО "МТС"',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "МОБИЛЬНЫЕ ТЕЛЕСИСТЕМЫ"',
    ...PAO,
    registeredOn: '1993-03-01',
    okved: '61.10',
    arbitrationCases: 60,
  },
  {
    inn: '7712040126',
    ogrn: '1027700092661',
    kpp: '770401001',
    nameShort: 'ПАО "АЭРОФЛОТ"',
    nameFull: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "АЭРОФЛОТ - РОССИЙСКИЕ АВИАЛИНИИ"',
    ...PAO,
    registeredOn: '1994-06-21',
    okved: '51.10',
    arbitrationCases: 70,
  },
  {
    inn: '7708503727',
    ogrn: '1037739877295',
    kpp: '770801001',
    nameShort: 'ОАО "РЖД"',
    nameFull: 'ОТКРЫТОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "РОССИЙСКИЕ ЖЕЛЕЗНЫЕ ДОРОГИ"',
    okopf: '12247',
    okopfName: 'Публичные акционерные общества',
    registeredOn: '2003-09-23',
    okved: '49.10',
    arbitrationCases: 230,
  },
  {
    inn: '7702235133',
    ogrn: '1037700013020',
    kpp: '770201001',
    nameShort: 'БАНК РОССИИ',
    nameFull: 'ЦЕНТРАЛЬНЫЙ БАНК РОССИЙСКОЙ ФЕДЕРАЦИИ',
    okopf: '75101',
    okopfName: 'Федеральные государственные учреждения',
    registeredOn: '1990-07-13',
    okved: '64.19',
    arbitrationCases: 40,
  },
  {
    inn: '7743001840',
    ogrn: '1027739850962',
    kpp: '771401001',
    nameShort: 'ООО "ВК"',
    nameFull: 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ "ВК"',
    ...OOO,
    registeredOn: '1998-09-21',
    okved: '63.11',
    arbitrationCases: 50,
  },
  {
    inn: '7704217370',
    ogrn: '1027739244741',
    kpp: '997750001',
    nameShort: 'ООО "ИНТЕРНЕТ РЕШЕНИЯ"',
    nameFull: 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ "ИНТЕРНЕТ РЕШЕНИЯ"',
    ...OOO,
    registeredOn: '1999-07-15',
    okved: '47.19',
    arbitrationCases: 110,
  },
  {
    inn: '7721546864',
    ogrn: '1067746062449',
    kpp: '997750001',
    nameShort: 'ООО "ВАЙЛДБЕРРИЗ"',
    nameFull: 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ "ВАЙЛДБЕРРИЗ"',
    ...OOO,
    registeredOn: '2004-10-06',
    okved: '47.19',
    arbitrationCases: 170,
  },
];

/** Synthetic 12-digit INNs from reference-data.md; 500100732259 carries the given OGRNIP. */
export const SOLE_PROPRIETOR_FIXTURES: readonly { inn: string; ogrn: string }[] = [
  { inn: '500100732259', ogrn: '304500116000157' },
  { inn: '123456789047', ogrn: '' },
];

/** A natural person (not a sole proprietor) with affiliations in the universe: fixed for tests. */
export const PERSON_FIXTURE_INN = '773412345677';

export interface BankFixture {
  bic: string;
  name: string;
  englishName: string;
  correspondentAccount: string | null;
  swift: string[];
  inn: string | null;
}

export const BANK_FIXTURES: readonly BankFixture[] = [
  {
    bic: '044525225',
    name: 'ПАО Сбербанк',
    englishName: 'SBERBANK',
    correspondentAccount: '30101810400000000225',
    swift: ['SABRRUMM'],
    inn: '7707083893',
  },
  {
    bic: '044525187',
    name: 'Банк ВТБ (ПАО)',
    englishName: 'VTB BANK',
    correspondentAccount: '30101810700000000187',
    swift: ['VTBRRUMM'],
    inn: '7702070139',
  },
  {
    bic: '044525593',
    name: 'АО "АЛЬФА-БАНК"',
    englishName: 'ALFA-BANK',
    correspondentAccount: '30101810200000000593',
    swift: ['ALFARUMM'],
    inn: '7728168971',
  },
  {
    bic: '044525974',
    name: 'АО "ТБанк"',
    englishName: 'TBANK',
    correspondentAccount: '30101810145250000974',
    swift: ['TICSRUMM'],
    inn: '7710140679',
  },
  {
    bic: '044525823',
    name: 'Банк ГПБ (АО)',
    englishName: 'GAZPROMBANK',
    correspondentAccount: '30101810200000000823',
    swift: ['GAZPRUMM'],
    inn: null,
  },
  {
    bic: '044525700',
    name: 'АО "Райффайзенбанк"',
    englishName: 'RAIFFEISENBANK',
    correspondentAccount: '30101810200000000700',
    swift: ['RZBMRUMM'],
    inn: null,
  },
  {
    bic: '044525985',
    name: 'ПАО Банк "ФК Открытие"',
    englishName: 'BANK OTKRITIE FINANCIAL CORPORATION',
    correspondentAccount: '30101810300000000985',
    swift: ['JSNMRUMM'],
    inn: null,
  },
  {
    bic: '044030653',
    name: 'Северо-Западный банк ПАО Сбербанк',
    englishName: 'SBERBANK NORTH-WEST',
    correspondentAccount: '30101810500000000653',
    swift: ['SABRRUMMNWB'],
    inn: '7707083893',
  },
  {
    bic: '044525000',
    name: 'ГУ Банка России по ЦФО',
    englishName: 'CENTRAL BANK OF RUSSIA MAIN BRANCH CENTRAL FEDERAL DISTRICT',
    correspondentAccount: null,
    swift: [],
    inn: '7702235133',
  },
];

/** A fixed closed bank (synthetic BIC) so tests and demos have one without hunting. */
export const CLOSED_BANK_BIC = '044525999';
