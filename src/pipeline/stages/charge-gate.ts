// Stage: charge serialization per company (DESIGN.md "Cost rules"). While a charged call for an
// INN is in flight, a call that the window it opens will cover waits for it (bounded by its
// deadline) and then goes free. The caller that goes on holds the company's lock until the
// record stage has recorded the window, so ten apps asking for a new company at once pay once.
// A paid call answered before its record (stages/record.ts, ctx.settling) gives the lock back
// only once the record is applied (or queued in the outbox): the answer does not wait for it, a
// read of the company on any replica does, and then goes covered. A shutdown waits for it too.
// A read whose cross-replica lead is asked for alongside the company's lock (stages/coalesce.ts:
// the lead's answer and the lock's come in one round trip) waits here for the lead before it
// goes on: a replica that does not lead gives the lock back at once and follows (Unsent
// not_leader), so nothing is opened or held for a call another replica makes, and a gate wait it
// started ends when it learns so.
// Must never: give the company's lock back before the record of the call it guards is applied or
// queued in the outbox (as when the record stage awaited it); go on past the gate without the lead
// when one was asked for.
import { randomUUID } from 'node:crypto';
import { Waker, type WakeSignal } from '../../clock.ts';
import { ChargeWaitTimeout } from '../../cost/charge-gate.ts';
import { endWithError } from '../../ops/tracing.ts';
import type { PipelineDeps } from '../deps.ts';
import { unsent } from '../outcome.ts';
import { upstreamUnavailable } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';
import { retryStoreFaults, storeRetry } from '../store-retry-options.ts';

/** What this stage uses of PipelineDeps. */
export type ChargeGateDeps = Pick<
  PipelineDeps,
  'charges' | 'clock' | 'config' | 'gate' | 'logger' | 'metrics' | 'random'
>;

export const chargeGate: StageFactory<ChargeGateDeps> = (deps) => async (ctx, next) => {
  const need = ctx.shape?.covered ?? null;
  if (ctx.shape === null || ctx.app === null) return next();
  // Asked for without waiting (the coalesce stage's early lead), or already held (undefined).
  const lead = ctx.sendWhen.get('lead');
  const notLeading = async () => lead !== undefined && !(await lead);
  // A charged read no window covers (a person): no gate, but nothing is opened before the lead.
  if (need === null) return (await notLeading()) ? unsent('not_leader') : next();
  let gate: Awaited<ReturnType<typeof deps.gate.enter>>;
  const span = ctx.trace?.child('charge gate wait');
  const stop = lead ? untilNotLeading(ctx.signal, lead) : ctx.signal;
  try {
    // The cache stage has just read the windows: the gate's first look reuses them.
    const shape = ctx.shape;
    // One owner for every try: a lock an earlier try took before a store fault is this request's.
    const attempt = { owner: randomUUID(), retry: false };
    gate = await retryStoreFaults(
      () => {
        const entered = deps.gate.enter(shape.inn, need, ctx.deadline, stop, ctx.windows, attempt);
        attempt.retry = true;
        return entered;
      },
      storeRetry(ctx, deps),
    );
  } catch (err) {
    if (await notLeading()) {
      endWithError(span, 'not_leader');
      return unsent('not_leader');
    }
    endWithError(span, err instanceof ChargeWaitTimeout ? 'charge_in_flight' : (err as Error).name);
    if (err instanceof ChargeWaitTimeout)
      return upstreamUnavailable('charge_in_flight', { inn: ctx.shape.inn });
    throw err;
  }
  if (gate.charged && (await notLeading())) {
    // Another replica leads this very call: the lock this one took is given back now. (A covered
    // read holds nothing: its lead stays a send condition, asked for alongside its rate slot.)
    await gate
      .release()
      .catch((err: unknown) =>
        deps.logger.warn({ err: (err as Error).message }, 'charge lock release failed; it expires by itself'),
      );
    endWithError(span, 'not_leader');
    return unsent('not_leader');
  }
  if (span) {
    // charged: this call took the company's lock and pays; covered: a window makes it free.
    span.setAttribute('cpgw.gate', gate.charged ? 'charged' : 'covered');
    span.end();
  }
  ctx.windows = gate.windows;
  ctx.covered = !gate.charged;
  // A miss that went on as closed while the cache stage's read lands learns what the request saw
  // on arrival from that read (stages/cache.ts): a window found here is a saving only if it was not.
  if (ctx.covered && ctx.windowCovered === undefined) await ctx.sendWhen.get('windows');
  if (ctx.covered && ctx.windowCovered === false)
    deps.metrics.saved(ctx, 'window', deps.metrics.directCost(ctx, false));
  if (!gate.charged) return next();
  const release = () =>
    gate
      .release()
      .catch((err: unknown) =>
        deps.logger.warn({ err: (err as Error).message }, 'charge lock release failed; it expires by itself'),
      );
  try {
    return await next();
  } finally {
    // The record still running after the answer (it never rejects): the lock goes after it.
    if (ctx.settling) deps.charges.track(ctx.settling.then(release));
    else await release();
  }
};

/** Aborts when the client goes away or the lead asked for alongside the lock went to another replica. */
function untilNotLeading(gone: WakeSignal, lead: Promise<boolean>): WakeSignal {
  if (gone.aborted) return gone;
  const stop = new Waker();
  gone.addEventListener('abort', () => stop.wake(), { once: true });
  void lead.then((ok) => {
    if (!ok) stop.wake();
  });
  return stop;
}
