// Fixtures, the unknown rule, sole proprietors (proprietor as head, address hidden),
// requisites shape and ruble strings in every money field.
import { describe, expect, it } from 'vitest';
import { completeInn, isValidInn } from '../../../src/domain/identifiers.ts';
import { isUnknownInn } from '../../../src/emulator/data/index.ts';
import { data, entries, sampleInns } from './helpers.ts';

const FIXTURES: [string, string, string][] = [
  ['7707083893', '1027700132195', 'ПАО СБЕРБАНК'],
  ['7736050003', '1027700070518', 'ПАО "ГАЗПРОМ"'],
  ['7736207543', '1027700229193', 'ООО "ЯНДЕКС"'],
  ['7706107510', '1027700043502', 'ПАО "НК "РОСНЕФТЬ"'],
  ['7708004767', '1027700035769', 'ПАО "ЛУКОЙЛ"'],
  ['7702070139', '1027739609391', 'БАНК ВТБ (ПАО)'],
  ['7728168971', '1027700067328', 'АО "АЛЬФА-БАНК"'],
  ['7710140679', '1027739642281', 'АО "ТБАНК"'],
  ['7740000076', '1027700149124', 'ПАО "МТС"'],
  ['7712040126', '1027700092661', 'ПАО "АЭРОФЛОТ"'],
  ['7708503727', '1037739877295', 'ОАО "РЖД"'],
  ['7702235133', '1037700013020', 'БАНК РОССИИ'],
  ['7743001840', '1027739850962', 'ООО "ВК"'],
  ['7704217370', '1027739244741', 'ООО "ИНТЕРНЕТ РЕШЕНИЯ"'],
  ['7721546864', '1067746062449', 'ООО "ВАЙЛДБЕРРИЗ"'],
];

const MONEY_KEYS = new Set([
  'amount',
  'price',
  'nominal',
  'charter_capital',
  'revenue',
  'net_profit',
  'value',
  'assets',
  'equity',
  'liabilities',
  'paid_total',
  'total',
  'penalties',
  'fines',
  'taxes_paid',
  'cash',
  'payables',
  'receivables',
  'gross_profit',
  'sales_profit',
  'fixed_assets',
]);

describe('fixtures', () => {
  it.each(FIXTURES)('%s has its real OGRN and name', (inn, ogrn, name) => {
    const r = data().requisites(inn)!;
    expect(r).toMatchObject({ inn, ogrn, name_short: name, type: 'legal' });
    expect(r.status.code).toBe('ACTIVE');
    expect(data().dossier(inn)!.company).toMatchObject({ inn, ogrn });
  });

  it('keeps the given KPPs and full names', () => {
    expect(data().requisites('7707083893')).toMatchObject({
      kpp: '773601001',
      name_full: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "СБЕРБАНК РОССИИ"',
    });
    expect(data().requisites('7736207543')).toMatchObject({
      kpp: '770401001',
      name_full: 'ОБЩЕСТВО С ОГРАНИЧЕННОЙ ОТВЕТСТВЕННОСТЬЮ "ЯНДЕКС"',
    });
  });

  it('the synthetic sole proprietor keeps the given OGRNIP', () => {
    expect(data().requisites('500100732259')).toMatchObject({
      type: 'individual',
      ogrn: '304500116000157',
      kpp: null,
    });
    expect(data().requisites('123456789047')?.type).toBe('individual');
  });
});

describe('unknown INNs', () => {
  it('follow FNV-1a(inn) mod 20 === 0, about one in twenty, never a fixture', () => {
    let unknown = 0;
    for (let i = 0; i < 2000; i++) {
      const inn = completeInn(String(770_000_000 + i * 7919).slice(0, 9));
      if (isUnknownInn(inn)) {
        unknown++;
        expect(data().dossier(inn)).toBeNull();
        expect(data().requisites(inn)).toBeNull();
        expect(data().section(inn, 'company')).toBeNull();
      } else expect(data().requisites(inn)).not.toBeNull();
    }
    expect(unknown).toBeGreaterThan(50);
    expect(unknown).toBeLessThan(160);
    for (const [inn] of FIXTURES) expect(isUnknownInn(inn)).toBe(false);
  });

  it('a natural person of the universe is not a sole proprietor (404 as a company)', () => {
    expect(data().dossier('773412345677')).toBeNull();
    expect(data().person('773412345677')).not.toBeNull();
  });
});

describe('sole proprietors', () => {
  it('have the proprietor as head, and address and municipal codes hidden', () => {
    for (const inn of data().universeInns().individual.slice(0, 30)) {
      const r = data().requisites(inn)!;
      expect(r.type).toBe('individual');
      expect(r.kpp).toBeNull();
      expect(r.address).toBeNull();
      expect(r.statistics_codes.okato).toBeNull();
      expect(r.statistics_codes.oktmo).toBeNull();
      expect(r.heads).toHaveLength(1);
      expect(r.heads[0]).toMatchObject({ inn, post: 'Индивидуальный предприниматель' });
      expect(r.name_short).toBe(`ИП ${r.heads[0]!.full_name}`);
      const company = data().dossier(inn)!.company;
      expect(company.address).toBeNull();
      expect(company.okato).toBeNull();
      expect(data().suggest(inn)[0]).not.toHaveProperty('address');
    }
  });
});

describe('requisites', () => {
  it('carries dates, address, heads and statistics codes, and no bank accounts', () => {
    const r = data().requisites('7707083893')!;
    expect(Object.keys(r)).toEqual(
      expect.arrayContaining([
        'inn',
        'type',
        'ogrn',
        'kpp',
        'okpo',
        'name_full',
        'name_short',
        'status',
        'registered_on',
        'address',
        'heads',
        'statistics_codes',
      ]),
    );
    expect(r.status).toEqual({ code: 'ACTIVE', title: 'Действует' });
    expect(r.heads.length).toBeGreaterThanOrEqual(2);
    expect(r.address?.full).toContain('Москва');
    expect(JSON.stringify(r)).not.toMatch(/account|bic/i);
  });

  it('statuses use the public analog codes and titles', () => {
    const codes = new Set(
      data()
        .universeInns()
        .legal.map((inn) => data().requisites(inn)!.status.code),
    );
    expect([...codes].sort()).toEqual(['ACTIVE', 'BANKRUPT', 'LIQUIDATED', 'LIQUIDATING', 'REORGANIZING']);
  });
});

describe('money', () => {
  it('every money field in company data is a ruble string with two decimals', () => {
    let checked = 0;
    for (const inn of ['7707083893', ...sampleInns()]) {
      const d = data().dossier(inn);
      const arbitration = data().section(inn, 'arbitration');
      for (const [k, v] of [...entries(d), ...entries(arbitration)]) {
        if (!MONEY_KEYS.has(k) || typeof v !== 'string') continue;
        expect(v, `${inn} ${k}`).toMatch(/^-?\d+\.\d{2}$/);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(2000);
  });

  it('reporting is converted from thousands: balance lines end in 000.00 and the balance adds up', () => {
    const statements = data().section('7707083893', 'statements') as {
      kind: 'ok';
      body: { form: string; lines: { code: string; value: string }[] }[];
    };
    const balance = statements.body.find((s) => s.form === '0710001')!;
    for (const line of balance.lines) expect(line.value).toMatch(/^-?\d*000\.00$|^0\.00$/);
    const v = (c: string) => balance.lines.find((l) => l.code === c)!.value;
    expect(v('1600')).toBe(v('1700'));
    expect(BigInt(v('1600').slice(0, -3))).toBeGreaterThan(10n ** 9n);
  });

  it('valid 12-digit INNs are sole proprietors unless unknown', () => {
    expect(isValidInn('123456789047')).toBe(true);
    expect(data().dossier('123456789047')?.company.type).toBe('individual');
  });
});
