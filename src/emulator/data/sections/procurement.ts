// Public procurement sections: contracts won as a supplier and placed as a customer (both
// paged), their summaries, and the procurement contact persons (absent from the dossier).

import { rublesFromKopecks } from '../money.ts';
import { bucket } from '../names.ts';
import { dateBetween, REFERENCE_DATE, type Rng } from '../prng.ts';
import {
  counterparty,
  paged,
  type SectionContent,
  type SectionContext,
  sectionRng,
  whole,
} from './context.ts';

const SUBJECTS = [
  'Поставка канцелярских товаров',
  'Оказание услуг по уборке помещений',
  'Выполнение работ по капитальному ремонту кровли',
  'Поставка компьютерного оборудования',
  'Оказание услуг по техническому обслуживанию систем вентиляции',
  'Поставка продуктов питания',
  'Разработка и сопровождение программного обеспечения',
  'Оказание транспортных услуг',
  'Поставка строительных материалов',
];
const CONTRACT_STATUSES = ['Исполнение', 'Исполнение завершено', 'Исполнение прекращено'];

interface Contract {
  registry_number: string;
  law: string;
  subject: string;
  price: string;
  signed_on: string;
  status: string;
  customer?: { inn: string; name: string };
  supplier?: { inn: string; name: string };
}

function contracts(ctx: SectionContext, rng: Rng, count: number, side: 'customer' | 'supplier'): Contract[] {
  const from = ctx.core.registeredOn > '2014-01-01' ? ctx.core.registeredOn : '2014-01-01';
  const out: Contract[] = [];
  for (let i = 0; i < count; i++) {
    const signed = dateBetween(rng, from, REFERENCE_DATE);
    const law = rng.chance(0.7) ? '44-ФЗ' : '223-ФЗ';
    out.push({
      registry_number: `${law === '44-ФЗ' ? '3' : '5'}${rng.digits(18)}`,
      law,
      subject: rng.pick(SUBJECTS),
      price: rublesFromKopecks(rng.bigAmount(6, 9 + ctx.core.scale)),
      signed_on: signed,
      status:
        signed < '2025-01-01' ? CONTRACT_STATUSES[rng.chance(0.9) ? 1 : 2]! : rng.pick(CONTRACT_STATUSES),
      [side]: counterparty(ctx, (n) => rng.int(0, n - 1)),
    });
  }
  out.sort((a, b) => (a.signed_on < b.signed_on ? 1 : a.signed_on > b.signed_on ? -1 : 0));
  return out;
}

/** Contracts won as a supplier; a stable 1 in 12 of companies has more than one page. */
export function procurementLists(ctx: SectionContext): { supplier: Contract[]; customer: Contract[] } {
  const rng = sectionRng(ctx, 'procurements');
  const { core } = ctx;
  const long =
    !core.fixture && core.type === 'legal' && bucket(ctx.seed, core.inn, 'procurements-long', 12) === 0;
  const supplierCount = core.fixture
    ? 25
    : long
      ? rng.int(101, 330)
      : rng.chance(0.5)
        ? rng.int(0, 8 + core.scale * 8)
        : 0;
  const customerCount = core.type === 'legal' && (core.fixture || rng.chance(0.2)) ? rng.int(1, 25) : 0;
  return {
    supplier: contracts(ctx, rng, supplierCount, 'customer'),
    customer: contracts(ctx, sectionRng(ctx, 'customer_procurements'), customerCount, 'supplier'),
  };
}

function summary(list: Contract[]): unknown {
  const byLaw: Record<string, { count: number; amount: string }> = {};
  let total = 0n;
  const sums = new Map<string, bigint>();
  for (const c of list) {
    const kop = BigInt(c.price.replace('.', ''));
    total += kop;
    sums.set(c.law, (sums.get(c.law) ?? 0n) + kop);
    byLaw[c.law] = { count: (byLaw[c.law]?.count ?? 0) + 1, amount: '0.00' };
  }
  for (const [law, sum] of sums) byLaw[law]!.amount = rublesFromKopecks(sum);
  return {
    contracts: list.length,
    amount: rublesFromKopecks(total),
    by_law: byLaw,
    first_on: list.at(-1)?.signed_on ?? null,
    last_on: list[0]?.signed_on ?? null,
  };
}

export function procurementSections(ctx: SectionContext): Record<string, SectionContent> {
  const lists = procurementLists(ctx);
  const rng = sectionRng(ctx, 'procurement_contacts');
  const contactCount = lists.supplier.length + lists.customer.length > 0 ? rng.int(1, 4) : 0;
  return {
    procurements: paged(lists.supplier),
    procurement_summary: whole(summary(lists.supplier)),
    customer_procurements: paged(lists.customer),
    customer_procurement_summary: whole(summary(lists.customer)),
    procurement_contacts: whole(
      Array.from({ length: contactCount }, () => ({
        name: `${rng.pick(['Смирнова', 'Козлов', 'Орлова', 'Зайцев'])} ${rng.pick(['Е.', 'А.', 'И.'])}${rng.pick(['В.', 'С.', 'Н.'])}`,
        phone: `+7${rng.pick(['495', '812', '383', '343'])}${rng.digits(7)}`,
        email: `tender${rng.int(1, 99)}@example.ru`,
        source: 'ЕИС',
        seen_on: dateBetween(rng, '2022-01-01', REFERENCE_DATE),
      })),
    ),
  };
}
