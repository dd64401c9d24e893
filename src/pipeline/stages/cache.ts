// Stage: the response cache. Looks up before anything is spent (no budget, no rate slot, no
// upstream call on a hit), stands in with a stale entry when the upstream fails, and stores what
// the upstream answered (only the coalescing leader stores; a free route's answer just after it is
// written, off its path). Scopes and check ownership are
// checked by the stages BEFORE this one: the cache is shared by all apps, its answers are not.
// Reads the company's windows once (a refresh inside an open window is free upstream).
import type { CacheEntry, CacheRequest } from '../../cache/index.ts';
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
    const { windowOpen, windowExpires } = await lookAtWindows(ctx, deps, guess);
    const creq: CacheRequest = {
      route: ctx.route.name,
      params: ctx.call.params,
      query: ctx.call.query,
      policy: ctx.policy,
      app: ctx.app?.name ?? null,
      directives: ctx.directives,
      windowOpen,
      ...(ctx.ticket?.inn ? { inn: ctx.ticket.inn } : {}),
    };
    const found = await deps.cache.lookup(creq);
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

/**
 * The company's windows as this request sees them, read once: whether one covers the read (an
 * entry past its age is then refreshed free) and when it ends (X-Window-Expires). On the first
 * pass a window this replica last saw is taken as it is, and the store's read becomes the send
 * condition `windows` (the call goes out only if they agree).
 */
async function lookAtWindows(
  ctx: RequestContext,
  deps: CacheDeps,
  guess: boolean,
): Promise<{ windowOpen: boolean; windowExpires: string | undefined }> {
  let windowOpen = false;
  const covered = ctx.shape?.covered ?? null;
  const inn = ctx.shape?.inn;
  if (!inn || !covered) return { windowOpen, windowExpires: undefined };
  const guessed = guess ? deps.windows.guess(inn, covered) : undefined;
  if (guessed) {
    // This replica last saw a window covering the read: the stages below go on as covered (its
    // lock, charge entry of 0 and rate slot asked for at once) while the store's windows are
    // read; the call is sent only if they agree, else all starts over here.
    ctx.windows = guessed;
    windowOpen = true;
    ctx.windowCovered = true;
    ctx.sendWhen.set(
      'windows',
      deps.windows.get(inn).then((windows) => deps.windows.covers(windows, covered)),
    );
  } else {
    try {
      ctx.windows = await deps.windows.get(inn);
      windowOpen = deps.windows.covers(ctx.windows, covered);
      ctx.windowCovered = windowOpen;
    } catch (err) {
      // Unknown windows: judged closed, so a too-old entry is not refreshed "for free".
      deps.logger.warn({ err: (err as Error).message }, 'windows unreadable; judged closed');
    }
  }
  let windowExpires: string | undefined;
  if (ctx.windows) {
    const expiry = deps.windows.expiry(ctx.windows, covered);
    if (expiry > deps.clock.now()) windowExpires = new Date(expiry).toISOString();
  }
  return { windowOpen, windowExpires };
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
  if (out.cache === 'COALESCED') return { ...out, headers: { ...out.headers, age: '0' } };
  // A free read is stored after its answer is written (a read before that is one more free
  // call). Any other answer is stored first, so a read right after it never pays again.
  if (freeRead(ctx, deps, out)) deps.cache.saveLater(creq, out);
  else await deps.cache.save(creq, out);
  return { ...out, headers: { ...out.headers, age: '0' }, cache: 'MISS' };
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
 * A read whose repetition costs nothing: a free route, or a read an open window covered that
 * cost nothing and whose window stays open (upstream, no margin) for at least a second more.
 */
function freeRead(ctx: RequestContext, deps: CacheDeps, out: Answer): boolean {
  if (ctx.route.charge === null) return true;
  const need = ctx.shape?.covered;
  if (ctx.covered !== true || out.chargedMinor !== 0 || !need || !ctx.windows) return false;
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
