// Bank records (real fixtures, the Bank of Russia branch without a correspondent account,
// closed banks with status and date, the unknown rule) and person records (affiliations
// whose counts add up and whose companies name the person back).
import { describe, expect, it } from 'vitest';
import { isValidInn } from '../../../src/domain/identifiers.ts';
import {
  CLOSED_BANK_BIC,
  isClosedBic,
  isUnknownBic,
  PERSON_FIXTURE_INN,
} from '../../../src/emulator/data/index.ts';
import { data } from './helpers.ts';

describe('banks', () => {
  it.each([
    ['044525225', '30101810400000000225', 'ПАО Сбербанк'],
    ['044525187', '30101810700000000187', 'Банк ВТБ (ПАО)'],
    ['044525593', '30101810200000000593', 'АО "АЛЬФА-БАНК"'],
    ['044525974', '30101810145250000974', 'АО "ТБанк"'],
    ['044525823', '30101810200000000823', 'Банк ГПБ (АО)'],
    ['044525700', '30101810200000000700', 'АО "Райффайзенбанк"'],
    ['044525985', '30101810300000000985', 'ПАО Банк "ФК Открытие"'],
    ['044030653', '30101810500000000653', 'Северо-Западный банк ПАО Сбербанк'],
  ])('%s is the real bank with its correspondent account', (bic, account, name) => {
    const bank = data().bank(bic)!;
    expect(bank).toMatchObject({
      bic,
      name,
      correspondent_account: account,
      status: 'active',
      closed_on: null,
    });
    expect(bank.accounts[0]).toMatchObject({ account, type: { code: 'CRSA' } });
    expect(bank.participant_status.code).toBe('PSAC');
    expect(bank.swift.length).toBeGreaterThan(0);
    expect(bank.address).toMatchObject({
      postal_code: expect.stringMatching(/^\d{6}$/),
      locality: expect.any(String),
      street: expect.any(String),
    });
  });

  it('the Bank of Russia main branch has no correspondent account', () => {
    expect(data().bank('044525000')).toMatchObject({
      correspondent_account: null,
      accounts: [],
      participant_type: { code: '00' },
    });
  });

  it('a closed bank is returned with status closed and a date, never as 404', () => {
    const bank = data().bank(CLOSED_BANK_BIC)!;
    expect(bank).toMatchObject({ status: 'closed', closed_on: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    expect(bank.participant_status).toEqual({ code: 'PSDL', title: expect.any(String) });
    expect(bank.restrictions.map((r) => r.code)).toContain('LWRS');
    expect(bank.restrictions.every((r) => r.title.length > 0 && /^\d{4}-\d{2}-\d{2}$/.test(r.date))).toBe(
      true,
    );
  });

  it('synthetic BICs follow stable unknown and closed rules', () => {
    let unknown = 0;
    let closed = 0;
    for (let i = 0; i < 1000; i++) {
      const bic = `0445${String(10000 + i).slice(-5)}`;
      const bank = data().bank(bic);
      if (isUnknownBic(bic)) {
        unknown++;
        expect(bank).toBeNull();
      } else if (isClosedBic(bic)) {
        closed++;
        expect(bank?.status).toBe('closed');
      } else expect(bank?.status).toBe('active');
    }
    expect(unknown).toBeGreaterThan(20);
    expect(closed).toBeGreaterThan(40);
    expect(isUnknownBic('044525225')).toBe(false);
  });
});

describe('persons', () => {
  it('a natural person lists companies whose counts add up and whose dossiers name the person', () => {
    const person = data().person(PERSON_FIXTURE_INN)!;
    expect(person).toMatchObject({ inn: PERSON_FIXTURE_INN, kind: 'individual' });
    expect(person.companies.length).toBeGreaterThan(0);
    const heads = new Set(person.companies.filter((c) => c.role === 'head').map((c) => c.inn));
    const founders = new Set(person.companies.filter((c) => c.role === 'founder').map((c) => c.inn));
    expect(person.head_count).toBe(heads.size);
    expect(person.founder_count).toBe(founders.size);
    for (const c of person.companies) {
      expect(isValidInn(c.inn)).toBe(true);
      const dossier = data().dossier(c.inn)!;
      expect(dossier.company.name_short).toBe(c.name_short);
      expect(c.ogrn).toBe(dossier.company.ogrn);
      const founders = dossier.founders as { inn: string }[];
      const listed = c.role === 'head' ? dossier.company.heads.map((h) => h.inn) : founders.map((f) => f.inn);
      expect(listed).toContain(PERSON_FIXTURE_INN);
    }
  });

  it('every head of a universe company finds the company in the person record', () => {
    for (const inn of data().universeInns().legal.slice(100, 140)) {
      for (const head of data().requisites(inn)!.heads) {
        const person = data().person(head.inn)!;
        expect(person.full_name).toBe(head.full_name);
        expect(person.companies.some((c) => c.inn === inn && c.role === 'head')).toBe(true);
      }
    }
  });

  it('a sole proprietor is a person whose record lists the business', () => {
    const person = data().person('500100732259')!;
    expect(person.kind).toBe('individual');
    expect(person.companies[0]).toMatchObject({
      inn: '500100732259',
      role: 'entrepreneur',
      ogrn: '304500116000157',
    });
    expect(person.full_name).toBe(data().requisites('500100732259')!.heads[0]!.full_name);
  });

  it('an organization founder (10 digits) lists the companies it founded', () => {
    const founderInns = new Set<string>();
    for (const inn of data().universeInns().legal.slice(0, 300)) {
      for (const f of data().dossier(inn)!.founders as { kind: string; inn: string }[])
        if (f.kind === 'legal') founderInns.add(f.inn);
    }
    const org = [...founderInns][0]!;
    const person = data().person(org)!;
    expect(person).toMatchObject({ inn: org, kind: 'legal', head_count: 0 });
    expect(person.founder_count).toBe(new Set(person.companies.map((c) => c.inn)).size);
    expect(person.founder_count).toBeGreaterThan(0);
    expect(person.companies.every((c) => c.role === 'founder')).toBe(true);
  });

  it('unknown INNs have no person', () => {
    expect(data().person('7707083894')).toBeNull();
  });
});
