// Stage: writes an upstream answer to the app unchanged (status, body, Retry-After,
// rate headers), moving the upstream's X-Request-Id to X-Upstream-Request-Id and adding
// the gateway's headers: X-Charged-Minor (what THIS call cost), X-Cost-Estimate-Minor,
// X-Window-Expires and X-Cache.
import type { FastifyReply } from 'fastify';
import type { UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';

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
]);

export function respond(ctx: RequestContext, reply: FastifyReply, res: UpstreamResponse): FastifyReply {
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
  return reply.code(res.status).send(res.body);
}
