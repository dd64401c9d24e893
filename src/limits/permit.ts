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

/** A permit whose release runs `onRelease` once, whatever the caller does. */
export function permit(
  waitedMs: number,
  classes: LimitClassName[],
  onRelease: (sentUpstream: boolean) => Promise<void>,
): Permit {
  let released = false;
  return {
    ok: true,
    waitedMs,
    classes,
    release: async (sentUpstream: boolean) => {
      if (released) return;
      released = true;
      await onRelease(sentUpstream);
    },
  };
}
