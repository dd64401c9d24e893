// A lease kept alive while work runs: renew() every `everyMs` on the injected clock until stop().
// Locks and pending charges of a replica that dies are then freed within one lease (10 s by
// default), whatever the caller's own wait was; a live caller never loses them mid-call.
import { type Clock, Waker } from '../clock.ts';

export interface Lease {
  /** Stops renewing (the holder releases or records separately). */
  stop(): void;
}

/**
 * Calls renew() every `everyMs` until stopped, or until renew() answers false (the lease was
 * lost: taken over or gone). Faults are reported and the loop goes on: the next renewal may work.
 */
export function keepAlive(
  clock: Clock,
  everyMs: number,
  renew: () => Promise<boolean>,
  onError: (err: unknown) => void = () => {},
): Lease {
  const waker = new Waker();
  void (async () => {
    for (;;) {
      await clock.sleep(everyMs, waker);
      if (waker.aborted) return;
      try {
        if (!(await renew())) return;
      } catch (err) {
        onError(err);
      }
    }
  })();
  return { stop: () => waker.wake() };
}
