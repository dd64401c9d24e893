// The learned section/dossier equivalence, kept in the Store's state role so every replica
// derives the same sections: per section name the counts of equal / partial / different
// comparisons (section-equivalence.ts), a separate "differs" mark written once (a plain set, so a
// concurrent count update can never lose a mismatch), the operator's pins from config
// (`cache.sectionsFromDossier`), and this replica's counters for /admin/cache/stats.
//
// Count updates are read-modify-write: two replicas recording at once may lose one increment of
// `equal` (learning then takes one comparison more); a difference is never lost.
//
// Must never: derive a section marked different unless an operator pinned it on, or throw from
// a read on a store fault (a fault is "not derivable").
import type { SectionName } from '../domain/requests.ts';
import { SECTION_NAMES } from '../domain/requests.ts';
import type { StateStore } from '../store/state-store.ts';
import {
  addEvidence,
  type Evidence,
  mayDerive,
  NO_COUNTS,
  type SectionCounts,
  type SectionMode,
  verdictName,
} from './section-equivalence.ts';

const COUNTS = 'sfd:counts:';
const DIFFERS = 'sfd:differs:';
const PREFETCH = 'sfd:prefetch:';
/** Learned verdicts are kept this long after their last update. */
const KEEP_MS = 30 * 24 * 3_600_000;

export interface SectionVerdictsOptions {
  state: StateStore;
  /** Pins from config; sections not named are learned. */
  modes?: Partial<Record<SectionName, SectionMode>>;
  /** Equal comparisons (and no difference) needed before a learned section is derived. */
  learnAfter: number;
  /** A section turned off by a difference (logged by the caller). */
  onDifference?: (section: SectionName, reason: string) => void;
  onError?: (error: unknown) => void;
}

/** This replica's counters (the admin stats). */
export interface DerivationCounters {
  /** Section reads answered from the cached dossier (X-Cache: DERIVED). */
  derived: number;
  /** What those reads would have cost sent upstream (minor units). */
  derivedSavedMinor: number;
  comparisons: { equal: number; partial: number; differs: number };
  prefetches: { fetched: number; skippedSaturated: number; failed: number; charged: number };
}

export class SectionVerdicts {
  readonly counters: DerivationCounters = {
    derived: 0,
    derivedSavedMinor: 0,
    comparisons: { equal: 0, partial: 0, differs: 0 },
    prefetches: { fetched: 0, skippedSaturated: 0, failed: 0, charged: 0 },
  };

  constructor(private readonly options: SectionVerdictsOptions) {}

  mode(section: SectionName): SectionMode {
    return this.options.modes?.[section] ?? 'learn';
  }

  /** The shared counts of one section (a store fault reads as "nothing learned"). */
  async counts(section: SectionName): Promise<SectionCounts> {
    try {
      const [raw, differs] = await Promise.all([
        this.options.state.get(COUNTS + section),
        this.options.state.get(DIFFERS + section),
      ]);
      const counts = parseCounts(raw);
      if (differs !== null && counts.differs === 0) return { ...counts, differs: 1, reason: differs };
      return counts;
    } catch (error) {
      this.options.onError?.(error);
      return { ...NO_COUNTS };
    }
  }

  /** Whether a first-page read of this section may be answered from a cached dossier now. */
  async derivable(section: SectionName): Promise<boolean> {
    const mode = this.mode(section);
    if (mode !== 'learn') return mode === 'on';
    return mayDerive(mode, await this.counts(section), this.options.learnAfter);
  }

  /** Records one comparison; a difference turns the section off for every replica. */
  async record(section: SectionName, evidence: Evidence): Promise<void> {
    this.counters.comparisons[evidence.kind]++;
    try {
      // Read before this difference's own mark is written: counts() folds a mark not yet
      // counted into `differs`, and the evidence would then be counted twice.
      const before = await this.counts(section);
      if (evidence.kind === 'differs') {
        const first = await this.options.state.setIfAbsent(DIFFERS + section, evidence.reason, KEEP_MS);
        if (first) this.options.onDifference?.(section, evidence.reason);
      }
      const counts = addEvidence(before, evidence);
      await this.options.state.set(COUNTS + section, JSON.stringify(counts), KEEP_MS);
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  /** One replica takes the dossier prefetch of a company per window; true for the taker. */
  async claimPrefetch(inn: string, owner: string, ttlMs: number): Promise<boolean> {
    try {
      return await this.options.state.setIfAbsent(PREFETCH + inn, owner, ttlMs);
    } catch (error) {
      this.options.onError?.(error);
      return false;
    }
  }

  /** Every section's mode, verdict and shared counts, with this replica's counters. */
  async snapshot(): Promise<Record<string, unknown>> {
    const sections: Record<string, unknown> = {};
    const all = await Promise.all(SECTION_NAMES.map((s) => this.counts(s)));
    SECTION_NAMES.forEach((section, i) => {
      const counts = all[i] ?? NO_COUNTS;
      const mode = this.mode(section);
      sections[section] = {
        mode,
        verdict: verdictName(mode, counts, this.options.learnAfter),
        ...counts,
      };
    });
    return { ...this.counters, learn_after: this.options.learnAfter, sections };
  }
}

function parseCounts(raw: string | null): SectionCounts {
  if (raw === null) return { ...NO_COUNTS };
  try {
    const v = JSON.parse(raw) as Partial<SectionCounts>;
    const n = (x: unknown) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : 0);
    const counts: SectionCounts = { equal: n(v.equal), partial: n(v.partial), differs: n(v.differs) };
    if (typeof v.reason === 'string') counts.reason = v.reason;
    return counts;
  } catch {
    return { ...NO_COUNTS };
  }
}
