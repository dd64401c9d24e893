// Stage: the response cache in front of execute(). Looks up before anything is spent (no
// budget, no rate slot, no upstream call on a hit), stands in with a stale entry when the
// upstream fails, and stores what the upstream answered (only the coalescing leader saves).
// Scopes and check ownership are checked BEFORE the lookup: the cache is shared by all apps,
// its answers are not.
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  type CacheEntry,
  type CacheRequest,
  parseCacheControl,
  type RequestDirectives,
} from '../cache/index.ts';
import { chargeShape } from '../cost/estimate.ts';
import { ApiError } from '../errors.ts';
import type { UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import { assertOwnsCheck, execute } from './execute.ts';
import { rateLimitHeaders, respond } from './respond.ts';

export async function throughCache(
  ctx: RequestContext,
  request: FastifyRequest,
  reply: FastifyReply,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  const directives = parseCacheControl(request.headers['cache-control']);
  const shape = chargeShape(ctx.route.name, ctx.call.params, ctx.call.body);
  let windowOpen = false;
  let inn: string | undefined;
  if (shape.covered && shape.inn) {
    const windows = await deps.windows.get(shape.inn);
    windowOpen = deps.windows.covers(windows, shape.covered);
    const expiry = deps.windows.expiry(windows, shape.covered);
    if (expiry > deps.clock.now()) ctx.windowExpires = new Date(expiry).toISOString();
  }
  if (ctx.route.name === 'check_poll') inn = (await assertOwnsCheck(ctx, deps))?.inn;
  const creq: CacheRequest = {
    route: ctx.route.name,
    params: ctx.call.params,
    query: ctx.call.query,
    app: ctx.app?.name ?? null,
    directives,
    windowOpen,
    ...(inn ? { inn } : {}),
  };
  const found = await deps.cache.lookup(creq);
  if (found.action === 'serve') return serveEntry(ctx, reply, deps, found.entry, found.status, request);
  if (found.action === 'not_cached') throw new ApiError('not_cached');
  if (found.action === 'bypass') {
    ctx.cache = 'BYPASS';
    return respond(ctx, reply, await execute(ctx, deps), deps);
  }
  let res: UpstreamResponse;
  try {
    res = await execute(ctx, deps);
  } catch (err) {
    const stale =
      err instanceof ApiError && err.code === 'upstream_unavailable'
        ? staleFor(deps, found.staleEntry, directives, ctx)
        : null;
    if (stale) return serveEntry(ctx, reply, deps, stale, 'STALE', request);
    throw err;
  }
  if (res.status === 502 || res.status === 503) {
    const stale = staleFor(deps, found.staleEntry, directives, ctx);
    if (stale) return serveEntry(ctx, reply, deps, stale, 'STALE', request);
  }
  if (ctx.cache !== 'COALESCED') {
    await deps.cache.save(creq, res);
    ctx.cache = 'MISS';
  }
  reply.header('age', '0');
  return respond(ctx, reply, res, deps);
}

function staleFor(
  deps: PipelineDeps,
  entry: CacheEntry | undefined,
  directives: RequestDirectives,
  ctx: RequestContext,
): CacheEntry | null {
  return deps.cache.onUpstreamError(entry, directives, ctx.app?.name ?? null);
}

async function serveEntry(
  ctx: RequestContext,
  reply: FastifyReply,
  deps: PipelineDeps,
  entry: CacheEntry,
  status: 'HIT' | 'STALE',
  request: FastifyRequest,
): Promise<FastifyReply> {
  const rendered = deps.cache.render(entry, request.headers['accept-encoding'], status);
  ctx.cache = status;
  ctx.chargedMinor = 0;
  for (const [name, value] of Object.entries(rendered.headers)) reply.header(name, value);
  if (ctx.route.charged) reply.header('x-charged-minor', '0');
  if (ctx.windowExpires) reply.header('x-window-expires', ctx.windowExpires);
  await rateLimitHeaders(ctx, reply, deps);
  return reply.code(rendered.status).send(rendered.body);
}
