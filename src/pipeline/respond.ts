// Stage: writes an upstream answer to the app unchanged (status, body, Retry-After,
// X-Charged-Minor, rate headers), moving the upstream's X-Request-Id to
// X-Upstream-Request-Id and adding the gateway's own headers.
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
  const charged = res.headers['x-charged-minor'];
  if (charged !== undefined && /^\d+$/.test(charged)) ctx.chargedMinor = Number(charged);
  return reply.code(res.status).send(res.body);
}
