// The request lifecycle of a proxied /v1 call, declared in one place: the stages below run in
// this order, each `(ctx, next) => Promise<Outcome>` (stage.ts). A stage may answer by itself
// (a refusal, a cache hit, the gateway's own /v1/me) or pass on and act on what comes back.
//
//   authenticate   token → app, scope                         (refuses 401/403)
//   validate       upstream's input rules; facts computed once (refuses 422/404)
//   localAnswers   GET /v1/me; only-if-cached on uncached routes
//   checks         check ownership before the cache; tickets after (logic in src/checks/)
//   cache          HIT / STALE / MISS (stores the answer), before anything is spent
//   derive         a section from the cached dossier (DERIVED); learns equivalence; prefetch
//   coalesce       identical requests in flight share one call
//   chargeGate     wait for a company's in-flight charge, or take its lock
//   idempotency    the Idempotency-Key of this logical request
//   budget         estimate, reserve on the caps                (refuses 402)
//   record         settle, ledger, window: the money after the answer
//   retry          pure retry policy, same key, injected clock
//   upstreamCall   the governed upstream call                  (refuses 429)
//
// Three stages start a wait the send depends on (SEND_CONDITIONS below); the upstream stage awaits
// them together with its rate slot and, when one says no, answers Unsent for its stage to act on.
// Refusals and Unsent are values until the handler writes them (refusals.ts, respond.ts); only
// faults are thrown.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NO_DIRECTIVES } from '../cache/index.ts';
import { Waker, type WakeSignal } from '../clock.ts';
import { lastQueryValues, parseJsonBody } from '../domain/requests.ts';
import type { IncomingCall, UpstreamRoute } from '../route-table.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import { type Answer, isRefusal, isUnsent, type Outcome, type Refusal } from './outcome.ts';
import { fromError } from './refusals.ts';
import { writeAnswer, writeRefusal } from './respond.ts';
import { type SendCondition, SendConditions } from './send-conditions.ts';
import { compose, type StageFactory } from './stage.ts';
import { authenticate } from './stages/authenticate.ts';
import { budget } from './stages/budget.ts';
import { cache } from './stages/cache.ts';
import { chargeGate } from './stages/charge-gate.ts';
import { checks } from './stages/checks.ts';
import { coalesce } from './stages/coalesce.ts';
import { derive } from './stages/derive.ts';
import { idempotency } from './stages/idempotency.ts';
import { localAnswers } from './stages/local-answers.ts';
import { record } from './stages/record.ts';
import { retry } from './stages/retry.ts';
import { upstreamCall } from './stages/upstream.ts';
import { validate } from './stages/validate.ts';

/**
 * What the upstream stage waits for before it sends, in the order the answers are judged: the
 * first "no" decides what the outcome says (a follower follows whatever else was refused).
 *   lead      coalesce: this replica leads the call across replicas     (else not_leader)
 *   windows   cache: the store's windows agree with this replica's guess (else windows_disagree)
 *   charge    budget: the charge entry is written and within the caps   (else charge_not_opened)
 */
export const SEND_CONDITIONS: readonly SendCondition[] = ['lead', 'windows', 'charge'];

export const STAGES: readonly StageFactory[] = [
  authenticate,
  validate,
  localAnswers,
  checks,
  cache,
  derive,
  coalesce,
  chargeGate,
  idempotency,
  budget,
  record,
  retry,
  upstreamCall,
];

/** The fastify handler of every /v1 route: one context, the stages, one answer. */
export function makePipeline(deps: PipelineDeps) {
  const run = compose(STAGES.map((stage) => stage(deps)));
  return (route: UpstreamRoute) =>
    async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
      const rawBody =
        route.method === 'POST' ? ((request.body as Buffer | undefined) ?? Buffer.alloc(0)) : undefined;
      const idem = request.headers['idempotency-key'];
      const call: IncomingCall = {
        params: request.params as Record<string, string>,
        query: lastQueryValues(request.query),
        body: route.method === 'POST' ? parseJsonBody(rawBody) : undefined,
        idempotencyKey: Array.isArray(idem) ? idem[0] : idem,
      };
      const ctx: RequestContext = {
        requestId: request.id,
        route,
        // HEAD never spends money or rate budget: served from the cache, else 504 not_cached.
        headers:
          request.method === 'HEAD' && route.limits.length > 0 ? headOnly(request.headers) : request.headers,
        call,
        rawBody,
        pathAndQuery: request.url,
        signal: clientGoneSignal(reply),
        sendWhen: new SendConditions(SEND_CONDITIONS),
        app: null,
        shape: null,
        directives: NO_DIRECTIVES,
        policy: null,
        deadline: 0,
        timeoutMs: 0,
      };
      if (deps.tracing) {
        const trace = deps.tracing.startRequest(request.method, route.url, route.name, request.headers);
        ctx.trace = trace;
        // Closed once the answer is written or the client left (the ServerResponse's last event).
        reply.raw.once('close', () => trace.end(ctx, { status: reply.raw.statusCode }));
      }
      request.ctx = ctx;
      let outcome: Outcome;
      try {
        outcome = await run(ctx);
      } catch (err) {
        // A fault from deeper code that is still ours to answer (the store down, an ApiError).
        const refusal = fromError(err);
        if (!refusal) throw err;
        outcome = refusal;
      }
      if (isUnsent(outcome)) {
        // The client left while its call was queued: nobody to write to. Any other Unsent is
        // its stage's to act on; reaching here it is a fault.
        if (outcome.why !== 'client_gone') throw new Error(`pipeline ended unsent: ${outcome.why}`);
        return reply.code(499).send();
      }
      // How it was served, said once on the context for the headers, the log line and metrics.
      ctx.cache = outcome.cache;
      ctx.chargedMinor = outcome.chargedMinor ?? chargedHeader(outcome);
      ctx.windowExpires = outcome.windowExpires;
      if (isRefusal(outcome)) return writeRefusal(ctx, reply, outcome, deps);
      return writeAnswer(ctx, reply, outcome, deps);
    };
}

/** An answer's X-Charged-Minor, when it says one (an answer no stage below priced). */
function chargedHeader(outcome: Answer | Refusal): number | undefined {
  const charged = outcome.headers['x-charged-minor'];
  return !isRefusal(outcome) && charged !== undefined && /^\d+$/.test(charged) ? Number(charged) : undefined;
}

/** A HEAD request's headers with only-if-cached added (RFC 9111 5.2.1.7). */
function headOnly(headers: FastifyRequest['headers']): FastifyRequest['headers'] {
  const cc = headers['cache-control'];
  return { ...headers, 'cache-control': cc ? `${cc}, only-if-cached` : 'only-if-cached' };
}

/**
 * Woken when the client goes away before its answer is written. A Waker, not an AbortController:
 * every /v1 call makes one, and an AbortController with its signal (an EventTarget) cost ~6 us
 * to make on a 2-core VM, ~10 us of the pass-through's fastify entry on another (issue 33).
 */
function clientGoneSignal(reply: FastifyReply): WakeSignal {
  const gone = new Waker();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) gone.wake();
  });
  return gone;
}

declare module 'fastify' {
  interface FastifyRequest {
    ctx?: RequestContext;
  }
}
