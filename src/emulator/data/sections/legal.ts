// Legal-risk sections: arbitration (court cases, paged, newest first), bankruptcy messages,
// the register of unfair suppliers (rnp) and disqualified heads.
import { rublesFromKopecks } from '../money.ts';
import { addDays, dateBetween, REFERENCE_DATE } from '../prng.ts';
import type { CourtCase } from '../types.ts';
import { COURT_PREFIX, COURTS } from '../vocab.ts';
import {
  counterparty,
  paged,
  type SectionContent,
  type SectionContext,
  sectionRng,
  whole,
} from './context.ts';

const ROLES = [
  ['plaintiff', 'Истец'],
  ['defendant', 'Ответчик'],
  ['third_party', 'Третье лицо'],
] as const;
const CASE_STATUSES = ['Рассматривается', 'Завершено', 'Приостановлено', 'Обжалуется'];
const CATEGORIES = [
  'Договор поставки',
  'Договор подряда',
  'Договор аренды',
  'Налоги и сборы',
  'Административное правонарушение',
  'Банкротство',
];

export function arbitration(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'arbitration');
  const from = ctx.core.registeredOn > '2010-01-01' ? ctx.core.registeredOn : '2010-01-01';
  const cases: CourtCase[] = [];
  for (let i = 0; i < ctx.core.arbitrationCases; i++) {
    const court = rng.pick(COURTS);
    const filedOn = dateBetween(rng, from, REFERENCE_DATE);
    const [role, roleTitle] = rng.pick(ROLES);
    const old = filedOn < '2024-06-01';
    cases.push({
      case_number: `${COURT_PREFIX[court]}-${rng.int(1, 320_000)}/${filedOn.slice(0, 4)}`,
      court,
      role,
      role_title: roleTitle,
      amount: rublesFromKopecks(rng.bigAmount(5, ctx.core.fixture ? 13 : 10)),
      filed_on: filedOn,
      status: old ? CASE_STATUSES[rng.chance(0.9) ? 1 : 3]! : rng.pick(CASE_STATUSES),
      category: rng.pick(CATEGORIES),
      counterparty: counterparty(ctx, (n) => rng.int(0, n - 1)),
    });
  }
  cases.sort((a, b) => (a.filed_on < b.filed_on ? 1 : a.filed_on > b.filed_on ? -1 : 0));
  return paged(cases);
}

export function bankruptcy(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'bankruptcy');
  const { code } = ctx.core.status;
  const count = code === 'BANKRUPT' ? rng.int(3, 9) : !ctx.core.fixture && rng.chance(0.05) ? 1 : 0;
  const kinds = [
    'Намерение кредитора обратиться в суд с заявлением о банкротстве',
    'Сведения о введении наблюдения',
    'Сведения о признании должника банкротом и открытии конкурсного производства',
    'Сообщение о собрании кредиторов',
    'Сведения о результатах инвентаризации имущества должника',
  ];
  let date = dateBetween(rng, '2021-01-01', '2024-06-01');
  return whole(
    Array.from({ length: count }, (_, i) => {
      date = addDays(date, rng.int(10, 90));
      return {
        number: String(rng.int(10_000_000, 19_999_999)),
        type: kinds[Math.min(i, kinds.length - 1)],
        published_on: date,
        source: 'ЕФРСБ',
        arbitration_manager:
          i > 0
            ? `${rng.pick(['Соколов', 'Орлов', 'Лебедев'])} ${rng.pick(['А.', 'С.', 'Д.'])}${rng.pick(['В.', 'Н.', 'П.'])}`
            : null,
      };
    }),
  );
}

export function rnp(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'rnp');
  const count = !ctx.core.fixture && rng.chance(0.05) ? rng.int(1, 2) : 0;
  return whole(
    Array.from({ length: count }, () => {
      const included = dateBetween(rng, '2020-01-01', REFERENCE_DATE);
      return {
        registry_number: `РНП.${rng.digits(8)}-${included.slice(2, 4)}`,
        included_on: included,
        excluded_on: addDays(included, 730) < REFERENCE_DATE ? addDays(included, 730) : null,
        reason: 'Уклонение от заключения контракта',
        customer: counterparty(ctx, (n) => rng.int(0, n - 1)),
        law: rng.pick(['44-ФЗ', '223-ФЗ']),
      };
    }),
  );
}

export function disqualifications(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'disqualifications');
  return whole(
    ctx.core.heads
      .filter((h) => h.disqualified)
      .map((h) => {
        const start = dateBetween(rng, '2023-01-01', '2025-06-01');
        return {
          inn: h.inn,
          full_name: h.full_name,
          start_on: start,
          end_on: addDays(start, 365 * rng.int(1, 3)),
          article: 'ч. 5 ст. 14.25 КоАП РФ',
          court: rng.pick(COURTS),
        };
      }),
  );
}
