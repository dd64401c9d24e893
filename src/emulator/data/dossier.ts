// Assembles a company's full record: every one of the 28 sections, and the dossier, which
// carries `found` plus 25 section members (procurement_contacts, egrul_rows and
// publication_dates are only readable through the section endpoint). Paged sections appear
// in the dossier as their first page. The `history` section is sized last so a dossier
// weighs about 100 KB of JSON, as the spec says.
import { SECTION_NAMES, type SectionName } from '../../domain/requests.ts';
import { companyObject } from './company.ts';
import type { CompanyCore } from './core.ts';
import { pageOf } from './paging.ts';
import type { SectionContent, SectionContext } from './sections/context.ts';
import { sectionRng, whole } from './sections/context.ts';
import {
  activities,
  branches,
  documents,
  egrulRows,
  founders,
  historyItem,
  licenses,
  management,
  neighbors,
  relations,
  sourcesAndDates,
} from './sections/corporate.ts';
import { annual, financials, flagsOf, reportsOf, scoreOf, statements, taxes } from './sections/finance.ts';
import { arbitration, bankruptcy, disqualifications, rnp } from './sections/legal.ts';
import { procurementSections } from './sections/procurement.ts';
import type { Dossier } from './types.ts';
import type { Universe } from './universe.ts';

/** Section names the dossier does not carry (the spec's 28 minus its 25). */
export const DOSSIER_ABSENT_SECTIONS: readonly SectionName[] = [
  'procurement_contacts',
  'egrul_rows',
  'publication_dates',
];
const ABSENT: ReadonlySet<string> = new Set(DOSSIER_ABSENT_SECTIONS);
export const DOSSIER_SECTIONS: readonly SectionName[] = SECTION_NAMES.filter((n) => !ABSENT.has(n));

/** Target dossier weight in UTF-8 bytes, varied per company by up to ±6 KB. */
export const DOSSIER_TARGET_BYTES = 100_000;

export interface CompanyRecord {
  core: CompanyCore;
  sections: Record<SectionName, SectionContent>;
  dossier: Dossier;
}

function member(inn: string, name: SectionName, content: SectionContent): unknown {
  return content.paged ? pageOf(content.items, inn, name) : content.body;
}

function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

export function buildRecord(universe: Universe, core: CompanyCore): CompanyRecord {
  const ctx: SectionContext = { seed: universe.world.seed, core, universe };
  const reports = reportsOf(ctx);
  const rnpSection = rnp(ctx);
  const flags = flagsOf(ctx, reports, !rnpSection.paged && (rnpSection.body as unknown[]).length > 0);
  const { sources, publication_dates } = sourcesAndDates(ctx);
  const sections = {
    company: whole(companyObject(ctx.seed, core)),
    score: whole(scoreOf(ctx, flags)),
    activities: activities(ctx),
    management: management(ctx),
    founders: founders(ctx),
    branches: branches(ctx),
    financials: financials(reports),
    statements: statements(reports),
    annual: annual(ctx, reports),
    taxes: taxes(ctx, reports),
    flags: whole(flags),
    ...procurementSections(ctx),
    arbitration: arbitration(ctx),
    bankruptcy: bankruptcy(ctx),
    rnp: rnpSection,
    disqualifications: disqualifications(ctx),
    licenses: licenses(ctx),
    relations: relations(ctx),
    neighbors: neighbors(ctx),
    history: whole([]),
    egrul_rows: egrulRows(ctx),
    documents: documents(ctx),
    sources,
    publication_dates,
  } as Record<SectionName, SectionContent>;

  const dossier: Record<string, unknown> = { found: true };
  for (const name of DOSSIER_SECTIONS) dossier[name] = member(core.inn, name, sections[name]);

  // Size the history (EGRUL change log) so the whole dossier lands near the target.
  const rng = sectionRng(ctx, 'history');
  const target = DOSSIER_TARGET_BYTES + rng.int(-6000, 6000);
  let size = byteLength(dossier);
  const history: { date: string }[] = [];
  while (history.length < 3 || size < target) {
    const item = historyItem(ctx, rng) as { date: string };
    const bytes = byteLength(item) + (history.length ? 1 : 0);
    if (history.length >= 3 && size + bytes > target) break;
    history.push(item);
    size += bytes;
  }
  history.sort((a, b) => (a.date < b.date ? 1 : a.date > b.date ? -1 : 0));
  sections.history = whole(history);
  dossier.history = history;
  return { core, sections, dossier: dossier as unknown as Dossier };
}
