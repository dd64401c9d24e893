// Every upstream call that spends a rate slot goes through here: it waits for a start from the
// RateGovernor (src/limits/), makes the call, tells the governor what the upstream answered
// (X-RateLimit-*, a 429's Retry-After) and gives the slot back when no byte left the gateway.
// One place for acquire → call → observe → release, used by the request pipeline and by the
// price book's GET /v1/me refresh alike, so no upstream call bypasses the shared budget.
//
// It never retries and never decides whether a call may start (the governor does); a call not
// sent comes back as a value ({sent: false, why}) for the caller to act on: the pipeline turns a
// refusal into 429 rate_limited, a background caller tries again later.
import type { WakeSignal } from '../clock.ts';
import type { Denial, LimitClassName, RateGovernor } from '../limits/index.ts';
import { copyWith } from '../object-copy.ts';
import type { RouteName } from '../route-table.ts';
import {
  type UpstreamClient,
  UpstreamFailure,
  type UpstreamRequest,
  type UpstreamResponse,
} from './upstream-client.ts';

/**
 * What must hold before a call is sent, asked for alongside its rate slot (the request pipeline's
 * SendConditions): `allMet` resolves false as soon as one is false (the queue is left early),
 * `unmet` names the first that is false in its own order, or null.
 */
export interface Preconditions<W extends string> {
  allMet(): Promise<boolean>;
  unmet(): Promise<W | null>;
}

/**
 * A call that was not sent, as a value: the governor refused to start it (deadline, app cap,
 * pause, client gone, shutdown), or a precondition said no. Any slot taken meanwhile was given
 * back; nothing reached the upstream.
 */
export type NotSent<W extends string = never> =
  | { sent: false; why: 'refused'; denial: Denial }
  | { sent: false; why: 'unmet'; condition: W };

export type Governed<W extends string = never> = (GovernedResponse & { sent: true }) | NotSent<W>;

export interface GovernedRequest<W extends string = never> extends UpstreamRequest {
  /** Whose budget share the call spends (an app name, or "_gateway" for the gateway's own calls). */
  app: string;
  route: RouteName;
  /** Longest wait in the queue; the class default when undefined. */
  maxWaitMs?: number;
  /** Leaves the queue when aborted (the client went away), even when `signal` is not passed on. */
  queueSignal?: WakeSignal;
  /** Called once the governor lets the call start (before it is sent). */
  onStart?: () => void;
  /** Classes this call is known not to spend (AcquireRequest.skip). */
  skip?: LimitClassName[];
  /** What must hold before the call is sent; one that does not gives the slot back (or leaves the queue). */
  ready?: Preconditions<W>;
  /** Classes the answer shows the upstream did not count (their slots are given back). */
  unspent?: (res: UpstreamResponse) => LimitClassName[];
}

export interface GovernedResponse extends UpstreamResponse {
  /** Time spent waiting in the rate queue before the call started. */
  queuedMs: number;
}

/** Errors that prove the request never reached the upstream, so its slot can be given back. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

export interface GovernedUpstreamOptions {
  client: UpstreamClient;
  governor: RateGovernor;
  /** A fault while following an answer (the answer itself is still returned). */
  onError?: (error: unknown) => void;
  /** Told of every attempt's outcome (metrics); must not throw. */
  observer?: UpstreamObserver;
}

export interface UpstreamObserver {
  answered(route: RouteName, status: number, code: string | undefined, seconds: number): void;
  failed(route: RouteName, kind: UpstreamFailure['kind']): void;
}

export class GovernedUpstream {
  readonly client: UpstreamClient;
  readonly governor: RateGovernor;

  constructor(private readonly options: GovernedUpstreamOptions) {
    this.client = options.client;
    this.governor = options.governor;
  }

  /**
   * The call, governed: its answer (`sent: true`), or why it was not sent (a value). A transport
   * failure is thrown as UpstreamFailure (the call may have reached the upstream).
   */
  async request<W extends string = never>(req: GovernedRequest<W>): Promise<Governed<W>> {
    const permit = await this.governor.acquire({
      app: req.app,
      route: req.route,
      maxWaitMs: req.maxWaitMs,
      signal: req.queueSignal ?? req.signal,
      skip: req.skip,
      needed: req.ready?.allMet(),
    });
    const condition = req.ready ? await req.ready.unmet() : null;
    if (condition !== null) {
      if (permit.ok) await permit.release(false).catch((error: unknown) => this.options.onError?.(error));
      return { sent: false, why: 'unmet', condition };
    }
    if (!permit.ok) return { sent: false, why: 'refused', denial: permit };
    req.onStart?.();
    let res: UpstreamResponse;
    try {
      res = await this.client.request(req);
    } catch (err) {
      if (err instanceof UpstreamFailure) this.options.observer?.failed(req.route, err.kind);
      await permit.release(!neverSent(err)).catch((error: unknown) => this.options.onError?.(error));
      throw err;
    }
    const code = res.status >= 400 ? errorCodeOf(res.body) : undefined;
    this.options.observer?.answered(req.route, res.status, code, res.durationMs / 1000);
    await this.governor
      .observe(req.route, res.status, res.headers, res.status === 429 ? code : undefined, req.app, permit)
      .catch((error: unknown) => this.options.onError?.(error));
    const unspent = req.unspent?.(res) ?? [];
    if (unspent.length > 0)
      await permit.refund(unspent).catch((error: unknown) => this.options.onError?.(error));
    await permit.release(true).catch((error: unknown) => this.options.onError?.(error));
    return copyWith(res, { queuedMs: permit.waitedMs, sent: true as const });
  }
}

/** A call the governor did not start, as an error (for callers outside the request pipeline that retry later). */
export class NotStarted extends Error {
  constructor(readonly notSent: NotSent<string>) {
    super(
      notSent.why === 'refused'
        ? `rate limit ${notSent.denial.limit}: ${notSent.denial.reason}, retry in ${notSent.denial.retryAfterMs} ms`
        : `not sent: ${notSent.condition}`,
    );
    this.name = 'NotStarted';
  }
}

/** The answer of a sent call; a call not sent is thrown as NotStarted (background callers). */
export function sentOrThrow<W extends string>(result: Governed<W>): GovernedResponse {
  if (!result.sent) throw new NotStarted(result);
  return result;
}

/** True when the failure proves no byte reached the upstream (nothing can have been charged). */
export function neverSent(err: unknown): boolean {
  if (!(err instanceof UpstreamFailure) || err.kind !== 'connection') return false;
  const code = (err.cause as { code?: string } | undefined)?.code;
  return code !== undefined && NEVER_SENT.has(code);
}

function errorCodeOf(body: Buffer): string | undefined {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
