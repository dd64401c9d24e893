// Financial sections: score, financials, statements, annual, taxes, flags. Reporting is
// generated in thousands of rubles (as published) and converted to ruble strings; the
// balance sheet adds up (1600 = 1700) and the summaries reuse the statement lines.
import { rublesFromKopecks, rublesFromThousands } from '../money.ts';
import { addDays, type Rng } from '../prng.ts';
import type { Score } from '../types.ts';
import { type SectionContent, type SectionContext, sectionRng, whole } from './context.ts';

const BALANCE_LINES: readonly [string, string][] = [
  ['1110', 'Нематериальные активы'],
  ['1150', 'Основные средства'],
  ['1160', 'Доходные вложения в материальные ценности'],
  ['1170', 'Финансовые вложения'],
  ['1180', 'Отложенные налоговые активы'],
  ['1190', 'Прочие внеоборотные активы'],
  ['1100', 'Итого по разделу I'],
  ['1210', 'Запасы'],
  ['1220', 'Налог на добавленную стоимость по приобретенным ценностям'],
  ['1230', 'Дебиторская задолженность'],
  ['1240', 'Финансовые вложения (за исключением денежных эквивалентов)'],
  ['1250', 'Денежные средства и денежные эквиваленты'],
  ['1260', 'Прочие оборотные активы'],
  ['1200', 'Итого по разделу II'],
  ['1600', 'БАЛАНС (актив)'],
  ['1310', 'Уставный капитал'],
  ['1370', 'Нераспределенная прибыль (непокрытый убыток)'],
  ['1300', 'Итого по разделу III'],
  ['1410', 'Заемные средства (долгосрочные)'],
  ['1400', 'Итого по разделу IV'],
  ['1510', 'Заемные средства (краткосрочные)'],
  ['1520', 'Кредиторская задолженность'],
  ['1500', 'Итого по разделу V'],
  ['1700', 'БАЛАНС (пассив)'],
];
const INCOME_LINES: readonly [string, string][] = [
  ['2110', 'Выручка'],
  ['2120', 'Себестоимость продаж'],
  ['2100', 'Валовая прибыль (убыток)'],
  ['2210', 'Коммерческие расходы'],
  ['2220', 'Управленческие расходы'],
  ['2200', 'Прибыль (убыток) от продаж'],
  ['2320', 'Проценты к получению'],
  ['2330', 'Проценты к уплате'],
  ['2340', 'Прочие доходы'],
  ['2350', 'Прочие расходы'],
  ['2300', 'Прибыль (убыток) до налогообложения'],
  ['2410', 'Налог на прибыль'],
  ['2400', 'Чистая прибыль (убыток)'],
];

/** One reporting year: line code to value in thousands of rubles. */
export interface YearReport {
  year: number;
  lines: Map<string, bigint>;
}

const REVENUE_RANGE: readonly [number, number][] = [
  [3, 5],
  [5, 6],
  [6, 7],
  [7, 8],
  [8, 10],
];

function part(rng: Rng, total: bigint, minPct: number, maxPct: number): bigint {
  return (total * BigInt(rng.int(minPct, maxPct))) / 100n;
}

function yearReport(rng: Rng, year: number, revenue: bigint, capital: bigint): YearReport {
  const l = new Map<string, bigint>();
  const cost = part(rng, revenue, 55, 92);
  const commercial = part(rng, revenue, 1, 8);
  const admin = part(rng, revenue, 1, 10);
  const interestIn = part(rng, revenue, 0, 2);
  const interestOut = part(rng, revenue, 0, 4);
  const otherIn = part(rng, revenue, 0, 3);
  const otherOut = part(rng, revenue, 0, 5);
  const gross = revenue - cost;
  const sales = gross - commercial - admin;
  const beforeTax = sales + interestIn - interestOut + otherIn - otherOut;
  const tax = beforeTax > 0n ? beforeTax / 5n : 0n;
  for (const [code, v] of [
    ['2110', revenue],
    ['2120', -cost],
    ['2100', gross],
    ['2210', -commercial],
    ['2220', -admin],
    ['2200', sales],
    ['2320', interestIn],
    ['2330', -interestOut],
    ['2340', otherIn],
    ['2350', -otherOut],
    ['2300', beforeTax],
    ['2410', -tax],
    ['2400', beforeTax - tax],
  ] as const)
    l.set(code, v);
  const assets = part(rng, revenue, 40, 160) + 10n;
  const nonCurrent = ['1110', '1150', '1160', '1170', '1180', '1190'].map(
    (c) => [c, part(rng, assets, 0, 12)] as const,
  );
  const current = ['1210', '1220', '1230', '1240', '1250', '1260'].map(
    (c) => [c, part(rng, assets, 1, 14)] as const,
  );
  let s1 = 0n;
  let s2 = 0n;
  for (const [c, v] of nonCurrent) {
    l.set(c, v);
    s1 += v;
  }
  for (const [c, v] of current) {
    l.set(c, v);
    s2 += v;
  }
  const total = s1 + s2;
  const capitalK = capital / 1000n;
  let retained = part(rng, total, -10, 45);
  const longDebt = part(rng, total, 0, 20);
  const shortDebt = part(rng, total, 0, 15);
  let payables = total - capitalK - retained - longDebt - shortDebt;
  if (payables < 0n) {
    retained += payables;
    payables = 0n;
  }
  for (const [c, v] of [
    ['1100', s1],
    ['1200', s2],
    ['1600', total],
    ['1310', capitalK],
    ['1370', retained],
    ['1300', capitalK + retained],
    ['1410', longDebt],
    ['1400', longDebt],
    ['1510', shortDebt],
    ['1520', payables],
    ['1500', shortDebt + payables],
    ['1700', total],
  ] as const)
    l.set(c, v);
  return { year, lines: l };
}

/** Published reporting years (none for a sole proprietor: they file no balance sheet). */
export function reportsOf(ctx: SectionContext): YearReport[] {
  const { core } = ctx;
  if (core.type === 'individual') return [];
  const rng = sectionRng(ctx, 'reports');
  const [lo, hi] = REVENUE_RANGE[core.scale]!;
  let revenue = rng.bigAmount(lo, hi);
  const capital = (core.capitalKopecks ?? 1_000_000n) / 100n;
  const first = Math.max(2019, Number(core.registeredOn.slice(0, 4)) + 1);
  const last = core.liquidatedOn ? Math.min(2024, Number(core.liquidatedOn.slice(0, 4)) - 1) : 2024;
  const out: YearReport[] = [];
  for (let year = first; year <= last; year++) {
    out.push(yearReport(rng, year, revenue, capital));
    revenue = (revenue * BigInt(rng.int(80, 135))) / 100n;
  }
  return out;
}

const r = (v: bigint | undefined) => rublesFromThousands(v ?? 0n);

export function financials(reports: YearReport[]): SectionContent {
  return whole({
    currency: 'RUB',
    source: 'ГИР БО',
    years: reports.map(({ year, lines }) => ({
      year,
      revenue: r(lines.get('2110')),
      gross_profit: r(lines.get('2100')),
      sales_profit: r(lines.get('2200')),
      net_profit: r(lines.get('2400')),
      assets: r(lines.get('1600')),
      equity: r(lines.get('1300')),
      liabilities: r((lines.get('1400') ?? 0n) + (lines.get('1500') ?? 0n)),
      receivables: r(lines.get('1230')),
      payables: r(lines.get('1520')),
      cash: r(lines.get('1250')),
      fixed_assets: r(lines.get('1150')),
    })),
  });
}

export function statements(reports: YearReport[]): SectionContent {
  const items = reports.flatMap(({ year, lines }) => {
    const form = (code: string, title: string, table: readonly [string, string][]) => ({
      year,
      form: code,
      form_title: title,
      lines: table.map(([c, name]) => ({
        code: c,
        name,
        value: r(lines.get(c)),
      })),
    });
    return [
      form('0710001', 'Бухгалтерский баланс', BALANCE_LINES),
      form('0710002', 'Отчет о финансовых результатах', INCOME_LINES),
    ];
  });
  return whole(items);
}

export function annual(ctx: SectionContext, reports: YearReport[]): SectionContent {
  const rng = sectionRng(ctx, 'annual');
  return whole(
    reports.map(({ year, lines }) => ({
      year,
      published_on: addDays(`${year + 1}-03-31`, rng.int(-60, 30)),
      revenue: r(lines.get('2110')),
      net_profit: r(lines.get('2400')),
      employees: Math.max(0, ctx.core.employees + rng.int(-ctx.core.employees >> 3, ctx.core.employees >> 3)),
      taxes_paid: r(-(lines.get('2410') ?? 0n) + part(rng, lines.get('2110') ?? 0n, 1, 6)),
      audited: ctx.core.scale >= 3,
    })),
  );
}

const TAX_NAMES = [
  'Налог на прибыль',
  'Налог на добавленную стоимость',
  'Страховые взносы на обязательное пенсионное страхование',
  'Страховые взносы на обязательное медицинское страхование',
  'Налог на имущество организаций',
  'Транспортный налог',
  'Земельный налог',
  'Налог на доходы физических лиц',
];

export function taxes(ctx: SectionContext, reports: YearReport[]): SectionContent {
  const rng = sectionRng(ctx, 'taxes');
  const base = reports.at(-1)?.lines.get('2110') ?? rng.bigAmount(3, 5);
  const usn = ctx.core.type === 'individual' || (ctx.core.scale === 0 && rng.chance(0.6));
  const names = usn
    ? ['Налог, взимаемый в связи с применением упрощенной системы налогообложения', ...TAX_NAMES.slice(2, 4)]
    : TAX_NAMES;
  const items = names.map((name) => ({
    name,
    amount: rublesFromKopecks(part(rng, base, 0, 6) * 100_000n + BigInt(rng.int(0, 99))),
  }));
  const hasArrears = rng.chance(0.15);
  return whole({
    year: 2024,
    regime: usn ? 'УСН' : 'ОСН',
    items,
    paid_total: rublesFromKopecks(items.reduce((s, i) => s + BigInt(i.amount.replace('.', '')), 0n)),
    arrears: {
      total: hasArrears ? rublesFromKopecks(rng.bigAmount(4, 8)) : '0.00',
      penalties: hasArrears ? rublesFromKopecks(rng.bigAmount(3, 6)) : '0.00',
      fines: hasArrears ? rublesFromKopecks(rng.bigAmount(3, 5)) : '0.00',
      as_of: '2025-10-01',
    },
  });
}

export interface Flags {
  mass_address: boolean;
  mass_head: boolean;
  mass_founder: boolean;
  unreliable_address: boolean;
  unreliable_head: boolean;
  disqualified_heads: boolean;
  tax_arrears_over_threshold: boolean;
  no_reporting: boolean;
  in_rnp: boolean;
  bankruptcy: boolean;
  liquidation: boolean;
}

export function flagsOf(ctx: SectionContext, reports: YearReport[], inRnp: boolean): Flags {
  const rng = sectionRng(ctx, 'flags');
  const { core } = ctx;
  const risky = !core.fixture;
  return {
    mass_address: risky && core.type === 'legal' && rng.chance(0.06),
    mass_head: risky && rng.chance(0.04),
    mass_founder: risky && rng.chance(0.04),
    unreliable_address: risky && core.type === 'legal' && rng.chance(0.03),
    unreliable_head: risky && rng.chance(0.02),
    disqualified_heads: core.heads.some((h) => h.disqualified),
    tax_arrears_over_threshold: risky && rng.chance(0.05),
    no_reporting: core.type === 'legal' && reports.length === 0,
    in_rnp: inRnp,
    bankruptcy: core.status.code === 'BANKRUPT',
    liquidation: core.status.code === 'LIQUIDATING' || core.status.code === 'LIQUIDATED',
  };
}

export function scoreOf(ctx: SectionContext, flags: Flags): Score {
  const rng = sectionRng(ctx, 'score');
  let score = ctx.core.fixture ? rng.int(88, 99) : rng.int(55, 98);
  score -= Object.values(flags).filter(Boolean).length * 15;
  if (ctx.core.status.code !== 'ACTIVE') score -= 30;
  score = Math.max(1, Math.min(100, score));
  return { score, risk_level: score >= 75 ? 'low' : score >= 45 ? 'medium' : 'high' };
}
