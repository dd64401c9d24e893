// Stage: writes an upstream answer to the app unchanged (status, body, Retry-After,
// rate headers), moving the upstream's X-Request-Id to X-Upstream-Request-Id and adding
// the gateway's headers: X-Charged-Minor (what THIS call cost), X-Cost-Estimate-Minor,
// X-Window-Expires and X-Cache. X-RateLimit-* describe the APP's headroom in the shared
// budget (not the upstream key's, which all apps share).
import type { FastifyReply } from 'fastify';
import type { UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'date',
  'server',
  'x-request-id',
  'proxy-authenticate',
  'upgrade',
  'trailer',
  // Replaced by the app's own headroom (rateLimitHeaders).
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
]);

export async function respond(
  ctx: RequestContext,
  reply: FastifyReply,
  res: UpstreamResponse,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  for (const [name, value] of Object.entries(res.headers)) {
    if (!HOP_BY_HOP.has(name)) reply.header(name, value);
  }
  const upstreamId = res.headers['x-request-id'];
  if (upstreamId) reply.header('x-upstream-request-id', upstreamId);
  if (ctx.chargedMinor === undefined) {
    const charged = res.headers['x-charged-minor'];
    if (charged !== undefined && /^\d+$/.test(charged)) ctx.chargedMinor = Number(charged);
  }
  if (ctx.chargedMinor !== undefined && ctx.route.charged)
    reply.header('x-charged-minor', String(ctx.chargedMinor));
  if (ctx.estimateMinor !== undefined) reply.header('x-cost-estimate-minor', String(ctx.estimateMinor));
  if (ctx.windowExpires) reply.header('x-window-expires', ctx.windowExpires);
  if (ctx.cache) reply.header('x-cache', ctx.cache);
  await rateLimitHeaders(ctx, reply, deps);
  return reply.code(res.status).send(res.body);
}

/**
 * X-RateLimit-Limit / -Remaining / -Reset (Unix seconds) for the tightest class of the route,
 * as this app sees it (its caps and pauses counted). Omitted when the state cannot be read.
 */
export async function rateLimitHeaders(
  ctx: RequestContext,
  reply: FastifyReply,
  deps: PipelineDeps,
): Promise<void> {
  if (!ctx.app) return;
  try {
    const h = await deps.upstream.governor.headroomFor(ctx.app.name, ctx.route.name);
    if (!h) return;
    reply.header('x-ratelimit-limit', String(h.limit));
    reply.header('x-ratelimit-remaining', String(h.remaining));
    reply.header('x-ratelimit-reset', String(Math.ceil(h.resetAtMs / 1000)));
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message }, 'rate headroom unavailable; X-RateLimit-* omitted');
  }
}
