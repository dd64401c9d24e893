// Corporate sections: activities, management, founders, branches (paged), licenses,
// relations and neighbors (drawn from the universe, so every INN is real and resolvable),
// history (EGRUL change log, also the dossier's size filler), egrul_rows (paged),
// documents, sources and publication dates.
import { completeOgrn } from '../../../domain/identifiers.ts';
import { bucket, personName } from '../names.ts';
import { dateBetween, dateTimeOn, REFERENCE_DATE, type Rng } from '../prng.ts';
import { regionActivityKey } from '../universe.ts';
import { OKVEDS } from '../vocab.ts';
import { paged, type SectionContent, type SectionContext, sectionRng, whole } from './context.ts';

export function activities(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'activities');
  const extra = rng.sample(
    OKVEDS.filter((o) => o.code !== ctx.core.okved.code),
    rng.int(2, ctx.core.fixture ? 14 : 9),
  );
  return whole([
    { code: ctx.core.okved.code, name: ctx.core.okved.name, version: 'ОКВЭД2', main: true },
    ...extra.map((o) => ({ code: o.code, name: o.name, version: 'ОКВЭД2', main: false })),
  ]);
}

export function management(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'management');
  const { core, universe } = ctx;
  const former =
    core.type === 'legal'
      ? rng.sample(universe.world.personPool, rng.int(0, 3)).map((inn) => {
          const from = dateBetween(rng, core.registeredOn, '2020-12-31');
          return {
            inn,
            full_name: personName(ctx.seed, inn).full,
            post: 'Генеральный директор',
            from,
            to: dateBetween(rng, from, '2021-06-30'),
          };
        })
      : [];
  return whole({ heads: core.heads, former, management_company: null });
}

export function founders(ctx: SectionContext): SectionContent {
  return whole(ctx.core.founders);
}

export function branches(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'branches');
  const { core } = ctx;
  if (core.type !== 'legal') return paged([]);
  const count = core.fixture
    ? core.inn === '7707083893'
      ? 150
      : rng.int(5, 60)
    : core.scale >= 2
      ? rng.int(0, 12)
      : 0;
  return paged(
    Array.from({ length: count }, (_, i) => ({
      kind: rng.chance(0.85) ? 'branch' : 'representative_office',
      name: `${rng.chance(0.85) ? 'Филиал' : 'Представительство'} № ${i + 1}`,
      kpp: `${core.inn.slice(0, 2)}${rng.digits(2)}02${String(i + 1).padStart(3, '0')}`,
      address: `${core.region.postal}${rng.digits(6 - core.region.postal.length)}, ${core.region.name}, ул. ${rng.pick(['Ленина', 'Мира', 'Садовая'])}, д. ${rng.int(1, 90)}`,
      registered_on: dateBetween(rng, core.registeredOn, REFERENCE_DATE),
    })),
  );
}

export function licenses(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'licenses');
  const bank = ctx.core.okved.code === '64.19';
  const count = bank ? 2 : rng.chance(0.2) ? rng.int(1, 3) : 0;
  return whole(
    Array.from({ length: count }, (_, i) => ({
      number: bank
        ? `${rng.int(1, 3500)}${i ? '-П' : ''}`
        : `Л${rng.digits(3)}-${rng.digits(5)}-${ctx.core.region.code}/${rng.digits(8)}`,
      activity: bank
        ? i
          ? 'Привлечение во вклады средств физических лиц'
          : 'Осуществление банковских операций'
        : rng.pick([
            'Медицинская деятельность',
            'Образовательная деятельность',
            'Перевозки пассажиров автобусами',
            'Деятельность по сбору и транспортированию отходов',
          ]),
      issuer: bank
        ? 'Банк России'
        : rng.pick(['Росздравнадзор', 'Рособрнадзор', 'Ространснадзор', 'Росприроднадзор']),
      issued_on: dateBetween(rng, ctx.core.registeredOn, REFERENCE_DATE),
      valid_until: null,
      status: 'Действует',
    })),
  );
}

/** Companies sharing a head or founder, subsidiaries and organization founders. */
export function relations(ctx: SectionContext): SectionContent {
  const { core, universe } = ctx;
  const out: unknown[] = [];
  const seen = new Set<string>([core.inn]);
  const push = (inn: string, relation: string, via: { inn: string; name: string } | null) => {
    const other = universe.byInn.get(inn);
    if (!other || seen.has(inn) || out.length >= 40) return;
    seen.add(inn);
    out.push({ inn, ogrn: other.ogrn, name_short: other.nameShort, status: other.status, relation, via });
  };
  for (const f of core.founders) if (f.kind === 'legal') push(f.inn, 'founder', null);
  for (const link of universe.links.get(core.inn) ?? []) push(link.companyInn, 'subsidiary', null);
  const people = [
    ...core.heads.map((h) => ({ inn: h.inn, name: h.full_name })),
    ...core.founders.filter((f) => f.kind === 'person').map((f) => ({ inn: f.inn, name: f.name })),
  ];
  for (const p of people) {
    if (p.inn === core.inn) continue;
    for (const link of universe.links.get(p.inn) ?? []) push(link.companyInn, `shared_${link.role}`, p);
  }
  return whole(out);
}

/** Universe companies of the same region and OKVED class (the public "similar companies" analog). */
export function neighbors(ctx: SectionContext): SectionContent {
  const { core, universe } = ctx;
  const rng = sectionRng(ctx, 'neighbors');
  const group = universe.byRegionActivity.get(regionActivityKey(core)) ?? [];
  const picked = rng.sample(
    group.filter((inn) => inn !== core.inn),
    20,
  );
  return whole(
    picked.map((inn) => {
      const other = universe.byInn.get(inn)!;
      return {
        inn,
        ogrn: other.ogrn,
        name_short: other.nameShort,
        status: other.status,
        region: other.region.name,
        activity: other.okved.code,
      };
    }),
  );
}

const HISTORY_KINDS = [
  ['address', 'Изменение адреса юридического лица'],
  [
    'head',
    'Изменение сведений о лице, имеющем право без доверенности действовать от имени юридического лица',
  ],
  ['founders', 'Изменение состава участников'],
  ['activities', 'Изменение сведений о видах экономической деятельности'],
  ['capital', 'Изменение размера уставного капитала'],
  ['tax', 'Сведения об учете в налоговом органе'],
  ['pension', 'Сведения о регистрации в качестве страхователя в территориальном органе Пенсионного фонда'],
  ['name', 'Изменение наименования'],
] as const;

/** One EGRUL change record; the n-th record is the same whoever asks. */
export function historyItem(ctx: SectionContext, rng: Rng): unknown {
  const [kind, title] = rng.pick(HISTORY_KINDS);
  const date = dateBetween(rng, ctx.core.ogrnDate, REFERENCE_DATE);
  const prefix =
    ctx.core.type === 'legal'
      ? `2${date.slice(2, 4)}${ctx.core.inn.slice(0, 2)}${rng.digits(7)}`
      : `4${date.slice(2, 4)}${ctx.core.inn.slice(0, 2)}${rng.digits(9)}`;
  return {
    grn: completeOgrn(prefix),
    date,
    kind,
    title,
    authority: `Межрайонная ИФНС России № ${rng.int(1, 46)} по ${ctx.core.region.name}`,
    details: { previous: `${kind}:${rng.digits(6)}`, current: `${kind}:${rng.digits(6)}` },
  };
}

export function egrulRows(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'egrul_rows');
  const long = bucket(ctx.seed, ctx.core.inn, 'egrul-long', 4) === 0;
  const count = ctx.core.fixture ? 340 : long ? rng.int(101, 260) : rng.int(20, 99);
  return paged(
    Array.from({ length: count }, (_, i) => ({
      row: i + 1,
      section: rng.pick([
        'Сведения о наименовании',
        'Сведения об адресе',
        'Сведения о регистрации',
        'Сведения об учредителях',
        'Сведения о видах деятельности',
      ]),
      field: rng.pick([
        'Полное наименование',
        'Адрес',
        'ОГРН',
        'ИНН',
        'Код ОКВЭД',
        'Доля в уставном капитале',
      ]),
      value: rng.digits(rng.int(4, 12)),
      recorded_on: dateBetween(rng, ctx.core.ogrnDate, REFERENCE_DATE),
    })),
  );
}

export function documents(ctx: SectionContext): SectionContent {
  const rng = sectionRng(ctx, 'documents');
  const titles = [
    'Устав',
    'Решение о государственной регистрации',
    'Лист записи ЕГРЮЛ',
    'Свидетельство о постановке на учет',
    'Бухгалтерская отчетность',
    'Решение единственного участника',
  ];
  return whole(
    rng.sample(titles, rng.int(2, titles.length)).map((title) => ({
      title,
      date: dateBetween(rng, ctx.core.registeredOn, REFERENCE_DATE),
      source: 'ФНС России',
      pages: rng.int(1, 40),
    })),
  );
}

const SOURCES = [
  ['egrul', 'ЕГРЮЛ/ЕГРИП, ФНС России'],
  ['girbo', 'ГИР БО, ФНС России'],
  ['rmsp', 'Реестр МСП, ФНС России'],
  ['taxes', 'Сведения об уплаченных налогах, ФНС России'],
  ['kad', 'Картотека арбитражных дел'],
  ['efrsb', 'ЕФРСБ, Федресурс'],
  ['eis', 'ЕИС в сфере закупок'],
  ['rnp', 'Реестр недобросовестных поставщиков, ФАС России'],
  ['rdl', 'Реестр дисквалифицированных лиц, ФНС России'],
  ['fssp', 'Банк данных исполнительных производств, ФССП России'],
  ['licenses', 'Реестры лицензий'],
  ['rosstat', 'Статистический регистр, Росстат'],
] as const;

export function sourcesAndDates(ctx: SectionContext): {
  sources: SectionContent;
  publication_dates: SectionContent;
} {
  const rng = sectionRng(ctx, 'sources');
  const dates: Record<string, string> = {};
  const sources = SOURCES.map(([code, name]) => {
    const date = dateBetween(rng, '2025-11-01', REFERENCE_DATE);
    dates[code] = date;
    return { code, name, updated_at: dateTimeOn(rng, date) };
  });
  return { sources: whole(sources), publication_dates: whole(dates) };
}
