// Whether a section read may be answered from the company's cached dossier: the comparison of a
// section endpoint's answer with the dossier's member of the same name, and the verdict that the
// evidence gathered so far (or an operator's pin) gives for one section name. Pure functions
// over parsed JSON and counts; the store and the clock are the callers' business.
//
// The spec says the dossier carries 25 of the 28 section names, one member each, but neither
// which 25 nor whether a member equals the endpoint's answer (paging!). So equivalence is
// learned: a section is derivable once `learnAfter` comparisons found it equal and none found
// it different. A paged section is compared on its first page, and a member is only served
// when it carries every item (its `cursor` is empty): the dossier holds nothing beyond page one.
//
// Must never: call a section equivalent on an absent member, on a first page whose later pages
// the dossier does not hold, or when any comparison ever found a difference (unless pinned on).
import type { SectionName } from '../domain/requests.ts';

/** What one comparison of a section answer with the dossier's member found. */
export type Evidence =
  | { kind: 'equal' }
  /** Equal first page of a paged section that has more pages: not derivable for this company. */
  | { kind: 'partial' }
  | { kind: 'differs'; reason: string };

export type SectionMode = 'on' | 'off' | 'learn';

/** Counts kept per section name (shared by replicas through the state store). */
export interface SectionCounts {
  equal: number;
  partial: number;
  differs: number;
  /** Why the first difference was found (kept with the counts, also logged). */
  reason?: string;
}

export const NO_COUNTS: Readonly<SectionCounts> = Object.freeze({ equal: 0, partial: 0, differs: 0 });

/** A section page as the spec shows it: `items` (array) and `cursor` (string). */
interface Page {
  items: unknown[];
  cursor: string;
}

export function isPage(value: unknown): value is Page {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.items) && typeof v.cursor === 'string';
}

/** The dossier's member for a section, or undefined when the dossier carries none. */
export function memberOf(dossier: unknown, section: SectionName): unknown {
  if (dossier === null || typeof dossier !== 'object' || Array.isArray(dossier)) return undefined;
  return Object.hasOwn(dossier, section) ? (dossier as Record<string, unknown>)[section] : undefined;
}

/**
 * Compares the section endpoint's first page (or whole answer) with the dossier's member.
 * `answer` is the parsed body of a first-page read (no cursor).
 */
export function compareSection(answer: unknown, member: unknown): Evidence {
  if (member === undefined) return { kind: 'differs', reason: 'the dossier carries no member of this name' };
  const where = firstDifference(answer, member, '');
  if (where !== null)
    return { kind: 'differs', reason: `section answer and dossier member differ at ${where}` };
  if (isPage(member) && member.cursor !== '') return { kind: 'partial' };
  return { kind: 'equal' };
}

/** The member that may answer a first-page read, or undefined (absent, or pages beyond the first). */
export function derivableMember(dossier: unknown, section: SectionName): unknown {
  const member = memberOf(dossier, section);
  if (member === undefined) return undefined;
  if (isPage(member) && member.cursor !== '') return undefined;
  return member;
}

/** Counts after one more piece of evidence (the first reason of a difference is kept). */
export function addEvidence(counts: SectionCounts, evidence: Evidence): SectionCounts {
  const next: SectionCounts = { ...counts, [evidence.kind]: counts[evidence.kind] + 1 };
  if (evidence.kind === 'differs' && counts.reason === undefined) next.reason = evidence.reason;
  return next;
}

/** Whether reads of this section may be derived now. */
export function mayDerive(mode: SectionMode, counts: SectionCounts, learnAfter: number): boolean {
  if (mode === 'on') return true;
  if (mode === 'off') return false;
  return counts.differs === 0 && counts.equal >= learnAfter;
}

/** The verdict as the admin API shows it. */
export function verdictName(
  mode: SectionMode,
  counts: SectionCounts,
  learnAfter: number,
): 'pinned_on' | 'pinned_off' | 'equivalent' | 'different' | 'learning' {
  if (mode === 'on') return 'pinned_on';
  if (mode === 'off') return 'pinned_off';
  if (counts.differs > 0) return 'different';
  return counts.equal >= learnAfter ? 'equivalent' : 'learning';
}

/** Path of the first difference between two JSON values (key order ignored), or null when equal. */
export function firstDifference(a: unknown, b: unknown, path: string): string | null {
  if (a === b) return null;
  const here = path || '$';
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return typeof a === typeof b && typeof a !== 'object' ? `${here} (value)` : `${here} (type)`;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return `${here} (array vs object)`;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${here} (length ${a.length} vs ${b.length})`;
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${here}[${i}]`);
      if (d !== null) return d;
    }
    return null;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  for (const key of keys) {
    if (!Object.hasOwn(ao, key) || !Object.hasOwn(bo, key)) return `${here}.${key} (missing on one side)`;
    const d = firstDifference(ao[key], bo[key], `${here}.${key}`);
    if (d !== null) return d;
  }
  return null;
}
