// The dossier (found + 25 section members, ~100 KB) and the section endpoint: whole
// sections, paged sections walked by cursor to the end, bad cursors, and the three
// sections the dossier lacks.
import { describe, expect, it } from 'vitest';
import { SECTION_NAMES, type SectionName } from '../../../src/domain/requests.ts';
import { DOSSIER_ABSENT_SECTIONS, PAGE_SIZE } from '../../../src/emulator/data/index.ts';
import { data, sampleInns } from './helpers.ts';

type Page = { items: unknown[]; cursor: string };

function walk(inn: string, name: SectionName): { pages: Page[]; cursors: string[] } {
  const pages: Page[] = [];
  const cursors: string[] = [];
  let cursor = '';
  do {
    const r = data().section(inn, name, cursor);
    if (r?.kind !== 'ok') throw new Error(`section ${name} ${cursor}: ${JSON.stringify(r)}`);
    const page = r.body as Page;
    pages.push(page);
    cursor = page.cursor;
    cursors.push(cursor);
  } while (cursor !== '' && pages.length < 50);
  return { pages, cursors };
}

describe('dossier', () => {
  it('has found, and exactly 25 section members', () => {
    const d = data().dossier('7707083893')!;
    expect(d.found).toBe(true);
    const sections = Object.keys(d).filter((k) => (SECTION_NAMES as readonly string[]).includes(k));
    expect(sections).toHaveLength(25);
    expect(Object.keys(d)).toEqual(['found', ...sections]);
    for (const absent of DOSSIER_ABSENT_SECTIONS) expect(d).not.toHaveProperty(absent);
    expect(DOSSIER_ABSENT_SECTIONS).toEqual(['procurement_contacts', 'egrul_rows', 'publication_dates']);
    expect(d.company).toMatchObject({
      inn: '7707083893',
      type: 'legal',
      ogrn: '1027700132195',
      kpp: '773601001',
    });
    expect(d.company.okato).toMatchObject({ code: expect.stringMatching(/^45\d{9}$/), name: 'г. Москва' });
    expect(d.score).toEqual({
      score: expect.any(Number),
      risk_level: expect.stringMatching(/^(low|medium|high)$/),
    });
  });

  it('weighs about 100 KB of JSON for typical companies', () => {
    for (const inn of ['7707083893', '7736207543', ...sampleInns()]) {
      const bytes = Buffer.byteLength(data().dossierJson(inn)!, 'utf8');
      expect(bytes, inn).toBeGreaterThanOrEqual(90_000);
      expect(bytes, inn).toBeLessThanOrEqual(115_000);
    }
  });

  it('dossierJson is the serialized dossier, memoized and fast', () => {
    const d = data();
    const json = d.dossierJson('7736050003')!;
    expect(JSON.parse(json)).toEqual(d.dossier('7736050003'));
    const started = performance.now();
    for (let i = 0; i < 100; i++) expect(d.dossierJson('7736050003')).toBe(json);
    expect((performance.now() - started) / 100).toBeLessThan(5);
  });

  it('paged sections appear in the dossier as their first page', () => {
    const d = data().dossier('7707083893')!;
    const first = data().section('7707083893', 'arbitration');
    expect(d.arbitration).toEqual(first?.kind === 'ok' ? first.body : null);
  });
});

describe('sections', () => {
  it('every one of the 28 names is readable, including the three the dossier lacks', () => {
    for (const name of SECTION_NAMES) {
      const r = data().section('7707083893', name);
      expect(r?.kind, name).toBe('ok');
    }
    const contacts = data().section('7707083893', 'publication_dates');
    expect(contacts).toMatchObject({
      kind: 'ok',
      body: { egrul: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) },
    });
  });

  it('non-paged sections equal the dossier member', () => {
    const d = data().dossier('7736207543')!;
    for (const name of [
      'company',
      'score',
      'activities',
      'management',
      'founders',
      'financials',
      'history',
    ] as const) {
      expect(data().section('7736207543', name)).toEqual({ kind: 'ok', body: d[name] });
    }
  });

  it('Sberbank arbitration spans several pages of 100 court cases; the cursors reach the end', () => {
    const { pages, cursors } = walk('7707083893', 'arbitration');
    expect(pages.length).toBe(3);
    expect(pages.map((p) => p.items.length)).toEqual([100, 100, 64]);
    expect(cursors.at(-1)).toBe('');
    expect(new Set(cursors).size).toBe(cursors.length);
    const all = pages.flatMap((p) => p.items) as { case_number: string; filed_on: string; amount: string }[];
    expect(all).toHaveLength(264);
    expect(all[0]).toEqual({
      case_number: expect.stringMatching(/^А\d{2}-\d+\/\d{4}$/),
      court: expect.any(String),
      role: expect.stringMatching(/^(plaintiff|defendant|third_party)$/),
      role_title: expect.any(String),
      amount: expect.stringMatching(/^\d+\.\d{2}$/),
      filed_on: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      status: expect.any(String),
      category: expect.any(String),
      counterparty: { inn: expect.any(String), name: expect.any(String) },
    });
    const dates = all.map((c) => c.filed_on);
    expect(dates).toEqual([...dates].sort().reverse());
  });

  it('a stable share of synthetic companies has multi-page arbitration, and item counts add up', () => {
    const legal = data().universeInns().legal.slice(15, 215);
    let multi = 0;
    for (const inn of legal) {
      const first = data().section(inn, 'arbitration');
      if (first?.kind !== 'ok' || (first.body as Page).cursor === '') continue;
      multi++;
      if (multi > 3) continue;
      const { pages } = walk(inn, 'arbitration');
      const total = pages.reduce((n, p) => n + p.items.length, 0);
      expect(total).toBeGreaterThan(PAGE_SIZE);
      expect(pages.slice(0, -1).every((p) => p.items.length === PAGE_SIZE)).toBe(true);
    }
    expect(multi).toBeGreaterThan(5);
  });

  it('the same cursor always gives the same page', () => {
    const first = data().section('7707083893', 'branches');
    const cursor = first?.kind === 'ok' ? (first.body as Page).cursor : '';
    expect(cursor).not.toBe('');
    expect(data().section('7707083893', 'branches', cursor)).toEqual(
      data().section('7707083893', 'branches', cursor),
    );
  });

  it('a garbage, foreign or out-of-range cursor is a bad cursor', () => {
    const first = data().section('7707083893', 'arbitration');
    const cursor = first?.kind === 'ok' ? (first.body as Page).cursor : '';
    const bad = { kind: 'bad_cursor' };
    expect(data().section('7707083893', 'arbitration', 'garbage!')).toEqual(bad);
    expect(data().section('7707083893', 'arbitration', 'Zm9v')).toEqual(bad);
    expect(data().section('7707083893', 'branches', cursor)).toEqual(bad);
    expect(data().section('7736050003', 'arbitration', cursor)).toEqual(bad);
    const far = Buffer.from('v1:7707083893:arbitration:900').toString('base64url');
    expect(data().section('7707083893', 'arbitration', far)).toEqual(bad);
    expect(data().section('7707083893', 'company', cursor)).toEqual(bad);
  });

  it('an unknown INN has no sections', () => {
    expect(data().section('7707083894', 'company')).toBeNull();
  });
});
