// Stage: what a charged call's outcome means for the money (issue #10).
// - The upstream charged (X-Charged-Minor > 0): claim + ledger entry + budget settle + window
//   open in ONE atomic store step (an upstream replay of a charge already recorded under the
//   same key counts nothing twice: this call then cost 0). The window opens from the moment
//   the call started. When the store is unreachable the record waits in the local outbox and
//   the app still gets its (paid) answer.
// - The upstream answered without a charge, or the call never left the gateway: the hold and
//   the pending entry go.
// - No answer (timeout, lost connection, a fault): the outcome is unknown, so the charge stays
//   counted against every budget until the reconciler replays its key.
// - A newly counted charge teaches the price book its kind's price (cost/price-book.ts).
// When the record runs (issue 33): a charged call whose key is the gateway's own (no app
// Idempotency-Key: one key per logical request, so no earlier record can have counted it) is
// answered as soon as the upstream answered, X-Charged-Minor the amount and X-Window-Expires the
// window opened at the call's start; its record runs after the answer (ctx.settling), with the
// company's lock (stages/charge-gate.ts) and the budget holds kept until it is applied, and a
// shutdown waits for it (ChargeBook.track); it starts on the turn after the answer (on a store
// that records synchronously it would otherwise end before the answer is written). Should the
// process die first, the pending entry written before the call finds the charge (the reconciler
// replays the key). A call with an app Idempotency-Key waits for its record: only the claim can
// tell whether an earlier request with the same key was counted already (this call then cost 0).
// Must never: answer a charge before its record when the key may have been counted before; let
// ctx.settling reject; end a hold before the record or release that settles it.
import { foundIn } from '../../checks/cold-checks.ts';
import type { AppConfig } from '../../config/schema.ts';
import type { OpenCharge } from '../../cost/charge-book.ts';
import type { CompanyWindows } from '../../cost/window-tracker.ts';
import { copyWith } from '../../object-copy.ts';
import { endWithError } from '../../ops/tracing.ts';
import type { ChargeShape } from '../../route-table.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isRefusal, isUnsent, type Outcome } from '../outcome.ts';
import type { StageFactory } from '../stage.ts';

/**
 * An answer that does not tell whether the key's call was charged: 409 idempotency_in_progress
 * (the first attempt, e.g. one that timed out, is still running upstream and may yet charge), or
 * a 5xx without X-Charged-Minor (a proxy's or a failure's answer, not the upstream's verdict).
 */
function outcomeUnknown(out: Answer): boolean {
  if (out.status === 409) return true;
  return out.status >= 500 && out.headers['x-charged-minor'] === undefined;
}

/** What this stage uses of PipelineDeps. */
export type RecordDeps = Pick<
  PipelineDeps,
  'charges' | 'clock' | 'logger' | 'metrics' | 'prices' | 'windows'
>;

export const record: StageFactory<RecordDeps> = (deps) => async (ctx, next) => {
  const opening = ctx.sendWhen.get('charge');
  if (opening === undefined || ctx.shape === null || ctx.app === null) return next();
  let out: Outcome;
  try {
    out = await next();
  } catch (err) {
    // A fault below: the call may have gone out. The charge is opened alongside the rate take:
    // known by now (the call waited for it); none opened (refused, the store down): nothing was
    // sent.
    const charge = (await opening) ? ctx.charge : undefined;
    if (charge) await deps.charges.unknown(charge);
    throw err;
  }
  const charge = (await opening) ? ctx.charge : undefined;
  // Not opened: nothing was sent (the budget stage answers the refusal or the store's fault).
  if (!charge) return out;
  if (isUnsent(out)) {
    // Gone while queued, another replica leads it, or its windows were not the store's: nothing
    // was sent.
    await deps.charges.release(charge);
    return out;
  }
  if (isRefusal(out)) {
    if (ctx.outcomeUnknown) await deps.charges.unknown(charge);
    else await deps.charges.release(charge);
    return out;
  }
  if (outcomeUnknown(out)) {
    // The upstream is still executing the key (409), or failed without saying what it charged:
    // counted until the reconciler's replay knows.
    await deps.charges.unknown(charge);
    return copyWith(out, { headers: copyWith(out.headers, { 'x-charged-minor': '0' }), chargedMinor: 0 });
  }
  return settle(ctx as Charged, deps, charge, out);
};

/** The context of a charged call of an app (the stage passes only these on). */
type Charged = RequestContext & { shape: ChargeShape; app: AppConfig };

/** An answer that says what it cost: the money settled, the answer says so (and when the window ends). */
async function settle(ctx: Charged, deps: RecordDeps, charge: OpenCharge, out: Answer): Promise<Answer> {
  const reported = Number(out.headers['x-charged-minor'] ?? '0');
  const amount = Number.isSafeInteger(reported) && reported > 0 ? reported : 0;
  const opens = ctx.shape.opens;
  let windows: CompanyWindows | undefined = ctx.windows;
  let chargedMinor = 0;
  if (amount === 0) {
    // A call estimated free (an open window covered it) that cost nothing held nothing on any
    // budget: its entry goes after the answer is written (through the outbox, which a shutdown
    // waits for).
    // One estimated to cost money releases its hold before the answer, so the app's next call
    // sees the room.
    if (charge.pending.estimateMinor === 0) deps.charges.releaseLater(charge);
    else await deps.charges.release(charge);
  } else if (ctx.call.idempotencyKey === undefined) {
    // The gateway's own key: this call cost `amount`, whatever the record finds (see the header).
    // The answer goes now; the money is recorded right after it.
    chargedMinor = amount;
    if (opens && opensWindowOf(ctx, out))
      windows = deps.windows.openedAt(ctx.windows, opens, ctx.startedAt ?? deps.clock.now());
    // On the next turn (the header): on the embedded store the record is a SQLite commit and its
    // fsync. What reads the store's windows right after the answer waits for ctx.settling (the
    // company's lock, the dossier prefetch).
    const settling = new Promise<void>((r) => setImmediate(r))
      .then(() => recordCharge(ctx, deps, charge, out, amount, true))
      .then(
        () => {},
        (err: unknown) =>
          deps.logger.error({ err: (err as Error)?.message, inn: ctx.shape.inn }, 'charge record failed'),
      );
    ctx.settling = settling;
    deps.charges.track(settling);
  } else {
    const recorded = await recordCharge(ctx, deps, charge, out, amount, false);
    chargedMinor = recorded.chargedMinor;
    windows = recorded.windows ?? windows;
  }
  let windowExpires: string | undefined;
  if (opens && windows && (ctx.route.name !== 'check_create' || out.status === 200)) {
    ctx.windows = windows;
    windowExpires = deps.windows.expiresText(windows, opens);
  }
  const recorded: Answer = copyWith(out, {
    headers: copyWith(out.headers, { 'x-charged-minor': String(chargedMinor) }),
    chargedMinor,
  });
  if (windowExpires) recorded.windowExpires = windowExpires;
  return recorded;
}

/**
 * Whether the answer opens the company's window: a check that answered 202 opens it only when its
 * data is ready (check stage); one that answered 200 only when the registers found the company,
 * as the upstream does.
 */
function opensWindowOf(ctx: Charged, out: Answer): boolean {
  return out.status === 200 && (ctx.route.name !== 'check_create' || foundIn(out.body));
}

/**
 * The upstream charged `amount`: claim, ledger entry, budget settle and window open in one store
 * step; what it counted (0 for a replay of a key already counted) and the company's windows
 * after it, when known. `answered`: the app has been answered as charged `amount` already.
 */
async function recordCharge(
  ctx: Charged,
  deps: RecordDeps,
  charge: OpenCharge,
  out: Answer,
  amount: number,
  answered: boolean,
): Promise<{ chargedMinor: number; windows: CompanyWindows | undefined }> {
  const startedAt = ctx.startedAt ?? deps.clock.now();
  const opens = ctx.shape.opens;
  const opensWindow = opensWindowOf(ctx, out);
  const span = ctx.trace?.child('charge record', { 'cpgw.amount_minor': amount });
  let recorded: Awaited<ReturnType<typeof deps.charges.record>>;
  try {
    recorded = await deps.charges.record(charge, {
      amountMinor: amount,
      upstreamRequestId: out.headers['x-request-id'] ?? null,
      startedAt,
      opensWindow,
    });
  } catch (err) {
    endWithError(span, (err as Error)?.name ?? 'error');
    throw err;
  }
  if (span) {
    span.setAttributes({ 'cpgw.charged_minor': recorded.chargedMinor, 'cpgw.stored': recorded.stored });
    span.end();
  }
  const counted = recorded.chargedMinor;
  if (counted > 0) {
    // A charge counted for the first time under its key tells the price now in force (the spec:
    // charged a few seconds before /v1/me shows it); a replay of a counted key does not.
    deps.prices.learn({ kind: ctx.shape.kind, priceMinor: counted, startedAt });
    deps.metrics.charge(ctx.app.name, ctx.shape.kind, counted);
    deps.logger.info(
      {
        charge: {
          app: ctx.app.name,
          operation: ctx.route.name,
          kind: ctx.shape.kind,
          inn: ctx.shape.inn,
          amountMinor: counted,
          idempotencyKey: charge.pending.key,
          stored: recorded.stored,
        },
      },
      'charge',
    );
  } else if (answered) {
    // The gateway's own key was counted already: only by the reconciler, replaying this very call
    // after its lease ran out (a record held in the outbox that long). The charge is this call's,
    // counted once, and the answer said so: no saving to count.
    deps.logger.warn(
      { inn: ctx.shape.inn, idempotencyKey: charge.pending.key },
      'charge recorded after its answer was counted already (by the reconciler)',
    );
  }
  if (recorded.windows) {
    deps.windows.learn(ctx.shape.inn, recorded.windows);
    return { chargedMinor: counted, windows: recorded.windows };
  }
  const windows = opens && opensWindow ? deps.windows.openedAt(ctx.windows, opens, startedAt) : undefined;
  return { chargedMinor: counted, windows };
}
