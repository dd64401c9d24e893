import { describe, expect, it } from 'vitest';
import {
  completeInn,
  completeOgrn,
  innProblem,
  isValidBic,
  isValidCorrespondentAccount,
  isValidOgrn,
} from '../../src/domain/identifiers.ts';

const FIXTURE_INNS = [
  '7707083893',
  '7736050003',
  '7736207543',
  '7706107510',
  '7708004767',
  '7702070139',
  '7728168971',
  '7710140679',
  '7740000076',
  '7712040126',
  '7708503727',
  '7702235133',
  '7743001840',
  '7704217370',
  '7721546864',
];
const FIXTURE_OGRNS = [
  '1027700132195',
  '1027700070518',
  '1027700229193',
  '1027700043502',
  '1027700035769',
  '1027739609391',
  '1027700067328',
  '1027739642281',
  '1027700149124',
  '1027700092661',
  '1037739877295',
  '1037700013020',
  '1027739850962',
  '1027739244741',
  '1067746062449',
];

describe('INN check digits', () => {
  it('accepts every real fixture and the synthetic 12-digit ones', () => {
    for (const inn of [...FIXTURE_INNS, '500100732259', '123456789047']) expect(innProblem(inn)).toBeNull();
  });
  it('rejects a wrong check digit, a bad format and all zeros', () => {
    expect(innProblem('7707083894')).toBe('checksum');
    expect(innProblem('500100732258')).toBe('checksum');
    expect(innProblem('770708389')).toBe('format');
    expect(innProblem('77070838931')).toBe('format');
    expect(innProblem('77070a3893')).toBe('format');
    expect(innProblem('0000000000')).toBe('all_zero');
    expect(innProblem('000000000000')).toBe('all_zero');
  });
  it('completes prefixes into valid INNs', () => {
    expect(completeInn('770708389')).toBe('7707083893');
    expect(innProblem(completeInn('5001007322'))).toBeNull();
  });
});

describe('OGRN, BIC and correspondent accounts', () => {
  it('accepts fixtures and rejects the invalid one', () => {
    for (const ogrn of [...FIXTURE_OGRNS, '304500116000157']) expect(isValidOgrn(ogrn)).toBe(true);
    expect(isValidOgrn('1027700132196')).toBe(false);
    expect(isValidOgrn(completeOgrn('102770013219'))).toBe(true);
  });
  it('validates BIC as nine digits only', () => {
    expect(isValidBic('044525225')).toBe(true);
    expect(isValidBic('004525988')).toBe(true);
    expect(isValidBic('100070047')).toBe(true);
    expect(isValidBic('04452522')).toBe(false);
    expect(isValidBic('04452522X')).toBe(false);
  });
  it('checks real correspondent accounts', () => {
    const banks: [string, string][] = [
      ['044525225', '30101810400000000225'],
      ['044525187', '30101810700000000187'],
      ['044525593', '30101810200000000593'],
      ['044525974', '30101810145250000974'],
      ['044525823', '30101810200000000823'],
      ['044525700', '30101810200000000700'],
      ['044525985', '30101810300000000985'],
      ['044030653', '30101810500000000653'],
    ];
    for (const [bic, account] of banks) expect(isValidCorrespondentAccount(account, bic)).toBe(true);
    expect(isValidCorrespondentAccount('30101810400000000226', '044525225')).toBe(false);
  });
});
