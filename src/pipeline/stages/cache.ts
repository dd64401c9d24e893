// Stage: the response cache. Looks up before anything is spent (no budget, no rate slot, no
// upstream call on a hit), stands in with a stale entry when the upstream fails, and stores what
// the upstream answered (only the coalescing leader stores; an answer whose re-read is free, a
// free route's or one an open window covers, just after it is written, off its path). Scopes and
// check ownership are checked by the stages BEFORE this one: the cache is shared by all apps, its
// answers are not.
// Reads the company's windows once (a refresh inside an open window is free upstream), alongside
// the lookup; a first-pass miss of a company's dossier or requisites with no entry at all goes on
// as closed while that read lands, and is sent only if the store agrees (send condition
// `windows`; issue 33: the read no longer comes before the charge open on a paid miss's path).
// Must never: let a call go out on windows guessed without the store's read agreeing; answer a
// charged read before its entry is stored when no open window makes its re-read free.
import type { CacheEntry, CacheRequest } from '../../cache/index.ts';
import type { CompanyWindows } from '../../cost/window-tracker.ts';
import { copyWith } from '../../object-copy.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isAnswer, isRefusal, isUnsent, type Outcome, servedWith } from '../outcome.ts';
import { refuse } from '../refusals.ts';
import type { Next, StageFactory } from '../stage.ts';

/** What this stage uses of PipelineDeps. */
export type CacheDeps = Pick<PipelineDeps, 'cache' | 'clock' | 'logger' | 'windows'>;

export const cache: StageFactory<CacheDeps> = (deps) => {
  const stage = async (ctx: RequestContext, next: Next, guess: boolean): Promise<Outcome> => {
    if (ctx.policy === null) {
      // A cached route whose request has no key (e.g. an unparsable page): passed through.
      const out = await next();
      return ctx.route.cache !== null ? servedWith(out, { cache: 'BYPASS' }) : out;
    }
    const look = lookAtWindows(ctx, deps, guess);
    const creq: CacheRequest = {
      route: ctx.route.name,
      params: ctx.call.params,
      query: ctx.call.query,
      policy: ctx.policy,
      app: ctx.app?.name ?? null,
      directives: ctx.directives,
      windowOpen: look.windowOpen,
      ...(look.reading ? { windowOpenLater: look.reading.then((r) => r.covers) } : {}),
      ...(ctx.ticket?.inn ? { inn: ctx.ticket.inn } : {}),
    };
    const found = await deps.cache.lookup(creq);
    let windowExpires = look.windowExpires;
    if (look.reading) {
      // No entry at all and a read that opens a window: go on as closed while the read lands.
      if (found.action === 'fetch' && found.staleEntry === undefined && guess && speculates(ctx))
        goOnAsClosed(ctx, look.reading);
      else windowExpires = await settleRead(ctx, deps, look.reading);
    }
    if (found.action === 'serve') return served(ctx, deps, found.entry, found.status, windowExpires);
    if (found.action === 'not_cached') return servedWith(refuse('not_cached'), { windowExpires });
    if (found.action === 'bypass') return servedWith(await next(), { cache: 'BYPASS', windowExpires });
    const out = await next();
    if (isUnsent(out) && out.why === 'windows_disagree' && guess) {
      // The windows assumed were not the store's: nothing was sent and nothing is held; once
      // more, from the store's windows.
      forgetBelowCache(ctx);
      return stage(ctx, next, false);
    }
    return servedWith(await afterMiss(ctx, deps, creq, found.staleEntry, out), { windowExpires });
  };
  return (ctx, next) => stage(ctx, next, true);
};

/** The store's windows of the company as read, or the read's failure. */
interface WindowsRead {
  windows: CompanyWindows | undefined;
  covers: boolean;
  failed?: unknown;
}

/**
 * The company's windows as this request sees them, read once: whether one covers the read (an
 * entry past its age is then refreshed free) and when it ends (X-Window-Expires). On the first
 * pass a window this replica last saw is taken as it is, and the store's read becomes the send
 * condition `windows` (the call goes out only if they agree). Otherwise the store's read is
 * started here and runs alongside the cache lookup (`reading`), which waits for it only when it
 * finds an entry.
 */
function lookAtWindows(
  ctx: RequestContext,
  deps: CacheDeps,
  guess: boolean,
): { windowOpen: boolean; windowExpires: string | undefined; reading?: Promise<WindowsRead> } {
  const covered = ctx.shape?.covered ?? null;
  const inn = ctx.shape?.inn;
  if (!inn || !covered) return { windowOpen: false, windowExpires: undefined };
  const guessed = guess ? deps.windows.guess(inn, covered) : undefined;
  if (guessed) {
    // This replica last saw a window covering the read: the stages below go on as covered (its
    // lock, charge entry of 0 and rate slot asked for at once) while the store's windows are
    // read; the call is sent only if they agree, else all starts over here.
    ctx.windows = guessed;
    ctx.windowCovered = true;
    ctx.sendWhen.set(
      'windows',
      deps.windows.get(inn).then((windows) => deps.windows.covers(windows, covered)),
    );
    return { windowOpen: true, windowExpires: expiresOf(ctx, deps) };
  }
  const reading = deps.windows.get(inn).then(
    (windows): WindowsRead => ({ windows, covers: deps.windows.covers(windows, covered) }),
    (failed: unknown): WindowsRead => ({ windows: undefined, covers: false, failed }),
  );
  return { windowOpen: false, windowExpires: undefined, reading };
}

/** The store's read landed: the request goes on with it (as before the read ran beside the lookup). */
async function settleRead(
  ctx: RequestContext,
  deps: CacheDeps,
  reading: Promise<WindowsRead>,
): Promise<string | undefined> {
  const read = await reading;
  if (read.failed !== undefined) {
    // Unknown windows: judged closed, so a too-old entry is not refreshed "for free".
    deps.logger.warn({ err: (read.failed as Error)?.message }, 'windows unreadable; judged closed');
  } else {
    ctx.windows = read.windows;
    ctx.windowCovered = read.covers;
  }
  return expiresOf(ctx, deps);
}

/**
 * Routes whose first-pass miss goes on as closed while the windows read lands: a company's
 * dossier or requisites (no section derived from a dossier depends on the window, stages/derive.ts).
 */
function speculates(ctx: RequestContext): boolean {
  return ctx.route.method === 'GET' && (ctx.route.name === 'company' || ctx.route.name === 'requisites');
}

/**
 * A paid miss need not wait for the windows read before the stages below start (issue 33): the
 * lead, the company's lock, the charge open (estimated as charged) and the rate take go out
 * while it lands, and the call is sent only if the store's windows are closed indeed (send
 * condition `windows`); if one covers the read, or the read failed, nothing was sent, the open
 * is released and all starts over here from a read of the store. A closed guess the charge gate
 * takes at once is the cache stage's read a round trip earlier (what cost/charge-gate.ts already
 * accepts: at worst an estimate held and released, never a second charge).
 */
function goOnAsClosed(ctx: RequestContext, reading: Promise<WindowsRead>): void {
  ctx.windows = { dossierUntil: 0, requisitesUntil: 0 };
  ctx.sendWhen.set(
    'windows',
    reading.then((read) => {
      // What the request saw when it arrived, for the charge gate's savings (set on this pass only:
      // a start-over comes after this and forgets it).
      if (read.failed === undefined) ctx.windowCovered = read.covers;
      // Agrees when closed, or when the charge gate found the call covered itself (its own read,
      // or this read landed in this replica's tracker before the gate looked).
      return read.failed === undefined && (!read.covers || ctx.covered === true);
    }),
  );
}

/** When the window covering the read ends, from ctx.windows; undefined when none is open. */
function expiresOf(ctx: RequestContext, deps: CacheDeps): string | undefined {
  const covered = ctx.shape?.covered ?? null;
  if (!ctx.windows || !covered) return undefined;
  return deps.windows.expiresText(ctx.windows, covered);
}

/** What the stages below answered a miss: stored, stood in for by a stale entry, or passed on. */
async function afterMiss(
  ctx: RequestContext,
  deps: CacheDeps,
  creq: CacheRequest,
  staleEntry: CacheEntry | undefined,
  out: Outcome,
): Promise<Outcome> {
  if (isUnsent(out)) return out;
  // Answered from the dossier entry (stages/derive.ts): not stored again, its Age is the dossier's.
  if (isAnswer(out) && out.cache === 'DERIVED') return out;
  const failed = isRefusal(out)
    ? out.code === 'upstream_unavailable'
    : out.status === 502 || out.status === 503;
  if (failed) {
    const stale = deps.cache.onUpstreamError(staleEntry, ctx.directives, ctx.app?.name ?? null);
    if (stale) return served(ctx, deps, stale, 'STALE', undefined);
  }
  if (isRefusal(out)) return out;
  if (out.cache === 'COALESCED') return copyWith(out, { headers: copyWith(out.headers, { age: '0' }) });
  // A read whose repetition is free is stored after its answer is written (a read before that
  // is one more free call). Any other answer is stored first, so a read right after it never pays
  // again.
  if (repeatIsFree(ctx, deps, out)) deps.cache.saveLater(creq, out);
  else await deps.cache.save(creq, out);
  return copyWith(out, { headers: copyWith(out.headers, { age: '0' }), cache: 'MISS' as const });
}

/** What the stages from here down set on a first pass that sent nothing. */
function forgetBelowCache(ctx: RequestContext): void {
  for (const key of ['windows', 'windowCovered', 'covered', 'charge', 'estimateMinor'] as const)
    delete ctx[key];
  ctx.sendWhen.clear();
}

/** The window must stay open this long after the answer for its entry to be stored after it. */
const DEFER_SAVE_MIN_WINDOW_MS = 1_000;

/**
 * A read whose repetition costs nothing, so its entry may be stored after the answer: a free
 * route; or a read a window covers, open (upstream, no margin) for at least a second more: the
 * window that made it free, or the one its charge opened (stages/record.ts sets ctx.windows to
 * it). A read of the company right after a charged one, on any replica, waits for the company's
 * lock, which is given back only once that charge and its window are recorded
 * (stages/charge-gate.ts), and then goes covered; the entry is stored on the turn after the answer
 * (issue 33: on a paid miss the write before the answer was 1-2.4 ms on this machine's runs).
 * A charged read no window covers again (a person) is stored before its answer.
 */
function repeatIsFree(ctx: RequestContext, deps: CacheDeps, out: Answer): boolean {
  if (ctx.route.charge === null) return true;
  const need = ctx.shape?.covered;
  if (!need || !ctx.windows) return false;
  const coveredFree = ctx.covered === true && out.chargedMinor === 0;
  const openedByItsCharge = (out.chargedMinor ?? 0) > 0;
  if (!coveredFree && !openedByItsCharge) return false;
  return deps.windows.expiry(ctx.windows, need) - deps.clock.now() >= DEFER_SAVE_MIN_WINDOW_MS;
}

function served(
  ctx: RequestContext,
  deps: CacheDeps,
  entry: CacheEntry,
  status: 'HIT' | 'STALE',
  windowExpires: string | undefined,
): Answer {
  const acceptEncoding = ctx.headers['accept-encoding'];
  const rendered = deps.cache.render(entry, acceptEncoding, status);
  return {
    status: rendered.status,
    headers: rendered.headers,
    body: rendered.body,
    cache: status,
    chargedMinor: 0,
    ...(windowExpires ? { windowExpires } : {}),
  };
}
