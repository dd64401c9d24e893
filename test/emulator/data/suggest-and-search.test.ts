// Suggest matching and ordering exactly as the spec states, and search groups, paging,
// totals and kind filters.
import { describe, expect, it } from 'vitest';
import { completeInn } from '../../../src/domain/identifiers.ts';
import { isUnknownInn, SEARCH_PAGE_SIZE } from '../../../src/emulator/data/index.ts';
import { orderSuggestions } from '../../../src/emulator/data/suggest.ts';
import { SURNAMES_M } from '../../../src/emulator/data/vocab.ts';
import { data } from './helpers.ts';

describe('suggest matching', () => {
  it('letters match the start of words of the short name, case-insensitive', () => {
    expect(
      data()
        .suggest('сбер')
        .map((s) => s.inn),
    ).toContain('7707083893');
    expect(
      data()
        .suggest('СБЕРБАНК')
        .map((s) => s.inn),
    ).toContain('7707083893');
    expect(
      data()
        .suggest('банк')
        .map((s) => s.inn),
    ).toContain('7728168971'); // АЛЬФА-БАНК: second word
  });

  it('does not match in the middle of a word, nor the full name', () => {
    expect(
      data()
        .suggest('бербанк')
        .map((s) => s.inn),
    ).not.toContain('7707083893');
    expect(data().suggest('России')).toEqual(
      data()
        .suggest('России')
        .filter((s) => s.name.toLowerCase().includes('росси')),
    );
    expect(
      data()
        .suggest('РОССИИ')
        .map((s) => s.inn),
    ).not.toContain('7707083893'); // only in the full name
  });

  it('Latin or merged spelling does not match a Cyrillic hyphenated name', () => {
    expect(
      data()
        .suggest('альфа-банк')
        .map((s) => s.inn),
    ).toContain('7728168971');
    expect(
      data()
        .suggest('Альфа Банк')
        .map((s) => s.inn),
    ).toContain('7728168971');
    expect(data().suggest('альфабанк')).toEqual([]);
    expect(data().suggest('Alfa-Bank')).toEqual([]);
    expect(data().suggest('Yandex')).toEqual([]);
  });

  it('digits match the start of an INN or an OGRN; a full number is found', () => {
    expect(
      data()
        .suggest('7707083')
        .map((s) => s.inn),
    ).toContain('7707083893');
    expect(
      data()
        .suggest('1027700132')
        .map((s) => s.inn),
    ).toContain('7707083893');
    expect(data().suggest('7707083893')[0]?.inn).toBe('7707083893');
    expect(data().suggest('1027700132195')[0]?.inn).toBe('7707083893');
    for (const s of data().suggest('770'))
      expect(s.inn.startsWith('770') || s.ogrn.startsWith('770')).toBe(true);
  });

  it('a full valid INN outside the universe is found too', () => {
    let inn = completeInn('770987654');
    for (let i = 1; isUnknownInn(inn); i++) inn = completeInn(String(770987654 + i));
    const items = data().suggest(inn);
    expect(items).toHaveLength(1);
    expect(items[0]!.inn).toBe(inn);
  });

  it('item fields follow the requisites record; sole proprietors have no address', () => {
    const [sber] = data().suggest('7707083893');
    expect(sber).toEqual({
      inn: '7707083893',
      type: 'legal',
      kpp: '773601001',
      ogrn: '1027700132195',
      name: 'ПАО СБЕРБАНК',
      name_full: 'ПУБЛИЧНОЕ АКЦИОНЕРНОЕ ОБЩЕСТВО "СБЕРБАНК РОССИИ"',
      address: expect.stringContaining('Москва'),
      status: { code: 'ACTIVE', title: 'Действует' },
      heads: expect.arrayContaining([
        expect.objectContaining({ inn: expect.any(String), full_name: expect.any(String) }),
      ]),
    });
    const [ip] = data().suggest('500100732259');
    expect(ip).not.toHaveProperty('address');
    expect(ip).not.toHaveProperty('kpp');
    expect(ip!.heads).toEqual([expect.objectContaining({ inn: '500100732259' })]);
  });

  it('rows not yet in the database lack kpp, address and status, with heads null', () => {
    const rows = data()
      .suggest('ООО')
      .concat(
        ...['Альфа', 'Ромашка', 'Вектор', 'Гранит', 'Маяк', 'Орион', 'Лотос'].map((q) => data().suggest(q)),
      );
    const missing = rows.filter((r) => r.heads === null);
    expect(missing.length).toBeGreaterThan(0);
    for (const r of missing) {
      expect(Object.keys(r).sort()).toEqual(['heads', 'inn', 'name', 'name_full', 'ogrn', 'type']);
    }
  });
});

describe('suggest ordering', () => {
  it('common words give more than 10 matches; at most 10 items', () => {
    for (const q of ['Альфа', 'Ромашка']) {
      expect(data().search(q, 'companies', 1).groups.companies!.total).toBeGreaterThan(10);
      expect(data().suggest(q)).toHaveLength(10);
    }
  });

  function counts(q: string): { legal: number; individual: number } {
    const g = data().search(q, 'all', 1).groups;
    return { legal: g.companies!.total, individual: g.entrepreneurs!.total };
  }
  function expectedTypes(legal: number, individual: number): string[] {
    const first = Math.min(7, legal);
    const ips = Math.min(individual, 10 - first);
    const rest = Math.min(legal - first, 10 - first - ips);
    return [...Array(first).fill('legal'), ...Array(ips).fill('individual'), ...Array(rest).fill('legal')];
  }

  it('up to seven companies, then sole proprietors, then the remaining companies', () => {
    const queries = [...SURNAMES_M, 'Альфа', 'Ромашка', 'ООО'];
    for (let p = 100; p < 1000; p += 7) queries.push(String(p));
    for (const q of queries) {
      const { legal, individual } = counts(q);
      const types = data()
        .suggest(q)
        .map((s) => s.type);
      expect(types, q).toEqual(expectedTypes(legal, individual));
    }
  });

  it('the remaining companies follow the sole proprietors (ordering rule on its own)', () => {
    const legal = data().universeInns().legal.slice(0, 9);
    const individual = data().universeInns().individual.slice(0, 2);
    const cores = [...legal, ...individual].map((inn) => ({
      inn,
      type: inn.length === 10 ? 'legal' : 'individual',
    }));
    const ordered = orderSuggestions(cores as unknown as Parameters<typeof orderSuggestions>[0]).map(
      (c) => c.inn,
    );
    expect(ordered).toEqual([...legal.slice(0, 7), ...individual, legal[7]]);
  });

  it('sole proprietors come after at most seven companies when there are many of both', () => {
    const q = SURNAMES_M.find(
      (s) =>
        data().search(s, 'entrepreneurs', 1).groups.entrepreneurs!.total >= 5 &&
        data().search(s, 'companies', 1).groups.companies!.total >= 8,
    );
    expect(q).toBeDefined();
    const types = data()
      .suggest(q!)
      .map((s) => s.type);
    expect(types).toEqual([...Array(7).fill('legal'), ...Array(3).fill('individual')]);
  });
});

describe('search', () => {
  it('kind=all returns the first page of every group', () => {
    const result = data().search('Смирнов', 'all', 3);
    expect(result.query).toBe('Смирнов');
    expect(result.kind).toBe('all');
    expect(Object.keys(result.groups).sort()).toEqual(['companies', 'entrepreneurs', 'persons']);
    for (const group of Object.values(result.groups)) {
      expect(group.items.length).toBe(Math.min(SEARCH_PAGE_SIZE, group.total));
      expect(group.has_more).toBe(group.total > SEARCH_PAGE_SIZE);
    }
    expect(result.groups.persons!.items[0]).toMatchObject({
      kind: 'person',
      inn: expect.any(String),
      full_name: expect.stringMatching(/^Смирнов/),
    });
  });

  it('other kinds page independently; pages add up to the total', () => {
    const total = data().search('Альфа', 'companies', 1).groups.companies!.total;
    const seen = new Set<string>();
    for (let page = 1; page <= 20; page++) {
      const r = data().search('Альфа', 'companies', page);
      expect(Object.keys(r.groups)).toEqual(['companies']);
      const g = r.groups.companies!;
      expect(g.total).toBe(total);
      for (const item of g.items) {
        expect(item.kind).toBe('company');
        seen.add(item.inn);
      }
      expect(g.has_more).toBe(page * SEARCH_PAGE_SIZE < total && page < 20);
      if (!g.has_more) break;
    }
    expect(seen.size).toBe(Math.min(total, 200));
  });

  it('entrepreneurs and persons groups carry their kind; persons counts match person records', () => {
    const e = data().search('Иванов', 'entrepreneurs', 1).groups.entrepreneurs!;
    expect(e.items.every((i) => i.kind === 'entrepreneur' && i.inn.length === 12)).toBe(true);
    const p = data().search('Иванов', 'persons', 1).groups.persons!;
    expect(p.total).toBeGreaterThan(0);
    for (const item of p.items) {
      const person = data().person(item.inn)!;
      expect(item).toMatchObject({ head_count: person.head_count, founder_count: person.founder_count });
    }
  });

  it('a full person name and an INN are valid queries', () => {
    const person = data().person('773412345677')!;
    expect(
      data()
        .search(person.full_name, 'persons', 1)
        .groups.persons!.items.map((i) => i.inn),
    ).toContain('773412345677');
    expect(data().search('7707083893', 'all', 1).groups.companies!.items[0]!.inn).toBe('7707083893');
    expect(data().search('zzz', 'all', 1).groups.companies).toEqual({ total: 0, has_more: false, items: [] });
  });
});
