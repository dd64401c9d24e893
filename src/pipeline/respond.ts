// Writes the outcome to the app. An answer goes out unchanged (status, body, Retry-After, the
// upstream's headers), the upstream's X-Request-Id moved to X-Upstream-Request-Id (an error
// envelope's meta.request_id becomes this answer's X-Request-Id), plus the gateway's headers:
// X-Charged-Minor (what THIS call cost), X-Cost-Estimate-Minor, X-Window-Expires and X-Cache. A refusal goes out as the upstream's error envelope. X-RateLimit-*
// describe the APP's headroom in the shared budget (not the upstream key's, which all apps share).
import type { FastifyReply } from 'fastify';
import { sendError } from '../errors.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import type { Answer, Refusal } from './outcome.ts';

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

export async function writeAnswer(
  ctx: RequestContext,
  reply: FastifyReply,
  answer: Answer,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  for (const [name, value] of Object.entries(answer.headers)) {
    if (!HOP_BY_HOP.has(name)) reply.header(name, value);
  }
  const upstreamId = answer.headers['x-request-id'];
  if (upstreamId) reply.header('x-upstream-request-id', upstreamId);
  if (ctx.chargedMinor !== undefined && ctx.shape !== null)
    reply.header('x-charged-minor', String(ctx.chargedMinor));
  // On every answer of a route that can charge: the budget stage's estimate, or 0 for an answer
  // that never reached it (a cache HIT, a coalesced follower, a shared check: nothing to pay).
  if (ctx.shape !== null) reply.header('x-cost-estimate-minor', String(ctx.estimateMinor ?? 0));
  if (ctx.windowExpires) reply.header('x-window-expires', ctx.windowExpires);
  if (ctx.cache) reply.header('x-cache', ctx.cache);
  await rateLimitHeaders(ctx, reply, deps);
  const body = answer.status >= 400 ? withOwnRequestId(answer.body, ctx.requestId) : answer.body;
  return reply.code(answer.status).send(body);
}

/**
 * An upstream error envelope (passed through, or a cached negative answer) with meta.request_id
 * set to THIS answer's X-Request-Id, as the spec promises; the upstream's id stays in
 * X-Upstream-Request-Id. Only the id's bytes change; a body that is not an envelope is kept.
 */
export function withOwnRequestId(body: Buffer, requestId: string): Buffer {
  let old: unknown;
  try {
    old = (JSON.parse(body.toString('utf8')) as { meta?: { request_id?: unknown } }).meta?.request_id;
  } catch {
    return body;
  }
  if (typeof old !== 'string' || old === requestId) return body;
  const text = body.toString('utf8');
  const from = `"request_id":${JSON.stringify(old)}`;
  const at = text.lastIndexOf(from);
  if (at < 0) return body;
  return Buffer.from(
    `${text.slice(0, at)}"request_id":${JSON.stringify(requestId)}${text.slice(at + from.length)}`,
  );
}

export async function writeRefusal(
  ctx: RequestContext,
  reply: FastifyReply,
  refusal: Refusal,
  deps: PipelineDeps,
): Promise<FastifyReply> {
  if (refusal.status >= 500)
    deps.logger.warn({ code: refusal.code, cause: describeCause(refusal.cause) }, 'refused');
  ctx.refusal = refusal;
  // A charged route's refusal cost nothing; say so, as a charged answer would.
  if (ctx.route.charge !== null) reply.header('x-charged-minor', String(ctx.chargedMinor ?? 0));
  // A 402 says what the refused call was estimated at (also in details.estimate_minor).
  if (ctx.estimateMinor !== undefined) reply.header('x-cost-estimate-minor', String(ctx.estimateMinor));
  if (ctx.windowExpires) reply.header('x-window-expires', ctx.windowExpires);
  return sendError(reply, refusal, ctx.requestId);
}

/**
 * X-RateLimit-Limit / -Remaining / -Reset (Unix seconds) for the tightest class of the route,
 * as this app sees it (its caps and pauses counted). Omitted when the state cannot be read.
 */
async function rateLimitHeaders(ctx: RequestContext, reply: FastifyReply, deps: PipelineDeps): Promise<void> {
  if (!ctx.app) return;
  try {
    const h = await deps.limits.headroomFor(ctx.app.name, ctx.route.name);
    if (!h) return;
    const values = rateLimitValues(h);
    for (let i = 0; i < values.length; i += 2) reply.header(values[i]!, values[i + 1]!);
  } catch (err) {
    deps.logger.warn({ err: (err as Error).message }, 'rate headroom unavailable; X-RateLimit-* omitted');
  }
}

/** X-RateLimit-Limit / -Remaining / -Reset (Unix seconds) as flat [name, value, ...] (also the hit path's). */
export function rateLimitValues(h: { limit: number; remaining: number; resetAtMs: number }): string[] {
  return [
    'x-ratelimit-limit',
    String(h.limit),
    'x-ratelimit-remaining',
    String(h.remaining),
    'x-ratelimit-reset',
    String(Math.ceil(h.resetAtMs / 1000)),
  ];
}

export function describeCause(cause: unknown): string | undefined {
  if (!cause) return undefined;
  const c = cause as { message?: string };
  return c.message ?? String(cause);
}
