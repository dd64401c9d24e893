// Stage: the upstream call. Builds the outgoing request (only the headers the upstream
// needs; the upstream key is added by UpstreamClient), applies the spec's advised timeouts
// and maps transport failures to the gateway's upstream_unavailable (502, or 504 on timeout).
import type { GatewayConfig } from '../config/schema.ts';
import { ApiError } from '../errors.ts';
import { type UpstreamClient, UpstreamFailure, type UpstreamResponse } from '../upstream/upstream-client.ts';
import type { RequestContext } from './context.ts';

export class ClientGone extends Error {
  constructor() {
    super('client went away');
    this.name = 'ClientGone';
  }
}

export async function forward(
  ctx: RequestContext,
  upstream: UpstreamClient,
  config: GatewayConfig['upstream'],
  extraHeaders: Record<string, string> = {},
): Promise<UpstreamResponse> {
  const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
  if (ctx.call.idempotencyKey !== undefined && !('idempotency-key' in headers)) {
    headers['idempotency-key'] = ctx.call.idempotencyKey;
  }
  if (ctx.rawBody !== undefined) headers['content-type'] = 'application/json';
  const timeoutMs = ctx.route.name === 'check_create' ? config.checkTimeoutMs : config.timeoutMs;
  try {
    const res = await upstream.request({
      method: ctx.route.method,
      path: ctx.pathAndQuery,
      headers,
      body: ctx.rawBody,
      timeoutMs,
      signal: ctx.signal,
    });
    ctx.upstreamMs = res.durationMs;
    return res;
  } catch (err) {
    if (err instanceof UpstreamFailure) {
      if (err.kind === 'aborted') throw new ClientGone();
      if (err.kind === 'timeout') {
        throw new ApiError(
          'upstream_unavailable',
          { reason: 'timeout', timeout_ms: timeoutMs },
          `The upstream did not answer within ${timeoutMs} ms`,
          {
            status: 504,
            cause: err,
          },
        );
      }
      throw new ApiError(
        'upstream_unavailable',
        { reason: 'connection' },
        'The upstream service is unreachable',
        {
          status: 502,
          cause: err,
        },
      );
    }
    throw err;
  }
}
