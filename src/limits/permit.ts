// What acquire() answers: a Permit (the call may start; release it once) or a Denial (a value,
// not an exception: the class that refused, when to try again, and why).
//
// Pure values; the only effect is the release callback the governor passes in. Must never let a
// permit be released twice.
import type { LimitClassName } from './limit-classes.ts';
import type { DenialReason } from './wait-stats.ts';

export interface Permit {
  ok: true;
  waitedMs: number;
  classes: LimitClassName[];
  /** true: the call reached the upstream (the slot stays spent); false: give the slots back. */
  release(sentUpstream: boolean): Promise<void>;
  /**
   * Gives back the slots of these classes only (with their pacing, cap and share), keeping the
   * others spent: the answer showed the upstream did not count the call in them (a check that
   * was not cold). Once per class; after release(false) it does nothing.
   */
  refund(classes: LimitClassName[]): Promise<void>;
}

export interface Denial {
  ok: false;
  /** The class that refused ("search", "key", ...). */
  limit: LimitClassName;
  /** When trying again can succeed, from now. */
  retryAfterMs: number;
  reason: DenialReason;
}

export function denial(limit: LimitClassName, retryAfterMs: number, reason: DenialReason): Denial {
  return { ok: false, limit, retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)), reason };
}

/**
 * A permit whose release runs `onRelease` once, whatever the caller does; `onRefund` gets each
 * class at most once, and nothing after the slots were all given back.
 */
export function permit(
  waitedMs: number,
  classes: LimitClassName[],
  onRelease: (sentUpstream: boolean) => Promise<void>,
  onRefund: (classes: LimitClassName[]) => Promise<void> = async () => {},
): Permit {
  let released = false;
  let returnedAll = false;
  const refunded = new Set<LimitClassName>();
  return {
    ok: true,
    waitedMs,
    classes,
    release: async (sentUpstream: boolean) => {
      if (released) return;
      released = true;
      if (!sentUpstream) returnedAll = true;
      await onRelease(sentUpstream);
    },
    refund: async (names: LimitClassName[]) => {
      if (returnedAll) return;
      const fresh = names.filter((c) => classes.includes(c) && !refunded.has(c));
      if (fresh.length === 0) return;
      for (const c of fresh) refunded.add(c);
      await onRefund(fresh);
    },
  };
}
