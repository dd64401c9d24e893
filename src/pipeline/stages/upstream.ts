// Stage (terminal): one governed upstream call. Builds the outgoing request (only the headers
// the upstream needs; the upstream key is added by UpstreamClient), waits for a start from the
// shared rate budget (GovernedUpstream): the first attempt within the app's X-Max-Wait-Ms, a
// retry only within what is left of the deadline. A first attempt the queue cannot start in
// time is 429 rate_limited (a value) and never reaches the upstream; time spent queued does not
// eat into the upstream timeout. The call is sent only once every send condition the stages
// above registered said yes (send-conditions.ts); one that said no, or a caller gone while
// queued, is Unsent (a value, nothing sent). Transport failures are thrown as UpstreamFailure for
// the retry stage. A POST /v1/check spends the `check` class only when it can start a cold check
// (checks/cold-checks.ts).
import type { Span } from '@opentelemetry/api';
import { knownNotCold, learnFromAnswer, unspentBy } from '../../checks/cold-checks.ts';
import { publicBase } from '../../checks/gateway-urls.ts';
import type { GatewayConfig } from '../../config/schema.ts';
import { gatewayOpenApi } from '../../openapi/gateway-openapi.ts';
import { endWithError, passTraceHeaders } from '../../ops/tracing.ts';
import type { NotSent } from '../../upstream/governed-upstream.ts';
import { UpstreamFailure } from '../../upstream/upstream-client.ts';
import type { RequestContext } from '../context.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, type Outcome, unsent } from '../outcome.ts';
import { rateLimited } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

/** The route is charged: keep going when the client leaves (the money is spent either way). */
const survivesClient = (ctx: RequestContext) => ctx.shape !== null;

/** What this stage uses of PipelineDeps. */
export type UpstreamCallDeps = Pick<PipelineDeps, 'clock' | 'config' | 'logger' | 'store' | 'upstream'>;

export const upstreamCall: StageFactory<UpstreamCallDeps> =
  (deps) =>
  async (ctx): Promise<Outcome> => {
    const attempt = ctx.attempt ?? 0;
    const headers = outgoingHeaders(ctx);
    const spans = new AttemptSpans(ctx, headers, attempt);
    const now = deps.clock.now();
    const deadline = ctx.callDeadline ?? ctx.deadline;
    const remaining = Math.max(0, deadline - now);
    try {
      // Not knowing (the store unreachable) spends the class: the safe side.
      const skip = await knownNotCold(ctx, deps).catch(() => []);
      const res = await deps.upstream.request({
        app: ctx.app?.name ?? '_public',
        route: ctx.route.name,
        maxWaitMs: attempt === 0 ? ctx.maxWaitMs : remaining,
        queueSignal: ctx.signal,
        onStart: () => {
          const started = deps.clock.now();
          ctx.startedAt ??= started;
          // From the first start on, all attempts together get timeoutMs.
          if (attempt === 0) ctx.callDeadline = Math.min(ctx.deadline, started + ctx.timeoutMs);
          spans.started();
        },
        method: ctx.route.method,
        path: ctx.pathAndQuery,
        headers,
        body: ctx.rawBody,
        // An upper bound; a retry may overrun the deadline by at most its own queue wait.
        timeoutMs: Math.min(ctx.timeoutMs, attempt === 0 ? ctx.timeoutMs : remaining),
        signal: survivesClient(ctx) ? undefined : ctx.signal,
        skip,
        // Sent only once it leads, its charge entry is written and the windows it assumed are the store's.
        ready: ctx.sendWhen.empty ? undefined : ctx.sendWhen,
        unspent: (r) => unspentBy(ctx.route.name, r),
      });
      if (!res.sent) {
        spans.notSent(res);
        // Not a fault: another replica leads the call, its charge entry was refused, or its
        // windows were not the store's.
        if (res.why === 'unmet') return unsent(res.condition);
        return res.denial.reason === 'aborted' ? unsent('client_gone') : rateLimited(res.denial);
      }
      spans.answered(res.status);
      await learnFromAnswer(ctx, deps, res).catch((error: unknown) =>
        deps.logger.warn({ err: error, requestId: ctx.requestId }, 'could not remember a check answer'),
      );
      ctx.queuedMs = (ctx.queuedMs ?? 0) + res.queuedMs;
      ctx.upstreamMs = (ctx.upstreamMs ?? 0) + res.durationMs;
      ctx.upstreamAttempts = attempt + 1;
      const answer: Answer = { status: res.status, headers: res.headers, body: res.body };
      return ctx.route.name === 'openapi' && res.status === 200
        ? gatewayDocument(ctx, answer, deps.config)
        : answer;
    } catch (err) {
      spans.failed(err);
      if (err instanceof UpstreamFailure) {
        // Only a free route's call is aborted when its client leaves: nobody to answer.
        if (err.kind === 'aborted') return unsent('client_gone');
        ctx.upstreamAttempts = attempt + 1;
      }
      throw err;
    }
  };

/**
 * The headers sent upstream: only what the upstream needs (the key is added by UpstreamClient).
 * Traced, the attempt's own span goes upstream as its traceparent (AttemptSpans.started); not
 * traced, the app's traceparent/tracestate go upstream unchanged.
 */
function outgoingHeaders(ctx: RequestContext): Record<string, string> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (ctx.idempotencyKey) headers['idempotency-key'] = ctx.idempotencyKey;
  if (ctx.rawBody !== undefined) headers['content-type'] = 'application/json';
  if (!ctx.trace) passTraceHeaders(ctx.headers, headers);
  return headers;
}

/** One attempt's spans: the wait for a start (the rate queue and the send conditions), then the call. */
class AttemptSpans {
  private queue: Span | undefined;
  private call: Span | undefined;

  constructor(
    private readonly ctx: RequestContext,
    private readonly headers: Record<string, string>,
    private readonly attempt: number,
  ) {
    this.queue = ctx.trace?.child('rate queue wait', { 'cpgw.attempt': attempt });
  }

  started(): void {
    const trace = this.ctx.trace;
    if (!trace) return;
    this.queue?.end();
    this.queue = undefined;
    this.call = trace.attempt(this.ctx, this.headers, this.attempt);
  }

  /** Not sent: a send condition said no (not a fault), or the rate queue refused it. */
  notSent(res: NotSent<string>): void {
    if (res.why === 'refused') {
      endWithError(this.queue, `rate_limited:${res.denial.reason}`);
      return;
    }
    this.queue?.setAttribute('cpgw.outcome', res.condition);
    this.queue?.end();
  }

  answered(status: number): void {
    const call = this.call;
    if (!call) return;
    call.setAttribute('http.response.status_code', status);
    if (status >= 500) endWithError(call, String(status));
    else call.end();
    this.call = undefined;
  }

  failed(err: unknown): void {
    if (!this.ctx.trace) return;
    const what = (err as Error).name;
    endWithError(this.queue, what);
    endWithError(this.call, err instanceof UpstreamFailure ? err.kind : what);
  }
}

/** The upstream's OpenAPI document made the gateway's (src/openapi/); an unreadable one as is. */
function gatewayDocument(ctx: RequestContext, answer: Answer, config: GatewayConfig): Answer {
  let upstream: Record<string, unknown>;
  try {
    upstream = JSON.parse(answer.body.toString('utf8')) as Record<string, unknown>;
  } catch {
    return answer;
  }
  // The requester's own address, validated (checks/gateway-urls.ts), or server.publicUrl.
  const doc = gatewayOpenApi(upstream, publicBase(config, ctx.headers));
  const { etag: _etag, 'last-modified': _modified, ...headers } = answer.headers;
  return { status: 200, headers, body: Buffer.from(JSON.stringify(doc)) };
}
