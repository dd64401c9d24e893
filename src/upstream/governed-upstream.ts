// Every upstream call that spends a rate slot goes through here: it waits for a start from the
// RateGovernor (src/limits/), makes the call, tells the governor what the upstream answered
// (X-RateLimit-*, a 429's Retry-After) and gives the slot back when no byte left the gateway.
// One place for acquire → call → observe → release, used by the request pipeline and by the
// price book's GET /v1/me refresh alike, so no upstream call bypasses the shared budget.
//
// It never retries and never decides whether a call may start (the governor does); a refusal
// comes back as a QueueRefusal error for the caller to turn into 429 rate_limited.
import type { Denial, LimitClassName, RateGovernor } from '../limits/index.ts';
import type { RouteName } from '../route-table.ts';
import {
  type UpstreamClient,
  UpstreamFailure,
  type UpstreamRequest,
  type UpstreamResponse,
} from './upstream-client.ts';

/**
 * Another replica leads this call (GovernedRequest.lead resolved false): nothing was sent, any
 * slot taken meanwhile was given back; the caller follows that replica's answer.
 */
export class NotLeader extends Error {
  constructor() {
    super('another replica leads this call');
    this.name = 'NotLeader';
  }
}

/**
 * What the call had to have before it is sent (GovernedRequest.ready: its charge entry) did not
 * come: nothing was sent, any slot taken meanwhile was given back.
 */
export class NotReady extends Error {
  constructor() {
    super('the call was not cleared to be sent');
    this.name = 'NotReady';
  }
}

/** The governor refused to start the call (deadline, app cap, pause, client gone, shutdown). */
export class QueueRefusal extends Error {
  constructor(readonly denial: Denial) {
    super(`rate limit ${denial.limit}: ${denial.reason}, retry in ${denial.retryAfterMs} ms`);
    this.name = 'QueueRefusal';
  }
}

export interface GovernedRequest extends UpstreamRequest {
  /** Whose budget share the call spends (an app name, or "_gateway" for the gateway's own calls). */
  app: string;
  route: RouteName;
  /** Longest wait in the queue; the class default when undefined. */
  maxWaitMs?: number;
  /** Leaves the queue when aborted (the client went away), even when `signal` is not passed on. */
  queueSignal?: AbortSignal;
  /** Called once the governor lets the call start (before it is sent). */
  onStart?: () => void;
  /** Classes this call is known not to spend (AcquireRequest.skip). */
  skip?: LimitClassName[];
  /**
   * Whether this call leads across replicas, asked for alongside the rate slot: the call is sent
   * only once it resolves true; false gives the slot back and throws NotLeader.
   */
  lead?: Promise<boolean>;
  /**
   * What must be true before the call is sent, asked for alongside the rate slot (a charged
   * call's entry being opened): false gives the slot back (or leaves the queue) and throws
   * NotReady.
   */
  ready?: Promise<boolean>;
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

  async request(req: GovernedRequest): Promise<GovernedResponse> {
    const permit = await this.governor.acquire({
      app: req.app,
      route: req.route,
      maxWaitMs: req.maxWaitMs,
      signal: req.queueSignal ?? req.signal,
      skip: req.skip,
      needed: allTrue(req.lead, req.ready),
    });
    if (req.lead && !(await req.lead)) {
      if (permit.ok) await permit.release(false).catch((error: unknown) => this.options.onError?.(error));
      throw new NotLeader();
    }
    if (req.ready && !(await req.ready)) {
      if (permit.ok) await permit.release(false).catch((error: unknown) => this.options.onError?.(error));
      throw new NotReady();
    }
    if (!permit.ok) throw new QueueRefusal(permit);
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
    return { ...res, queuedMs: permit.waitedMs };
  }
}

/** true once every given promise is true, false as soon as one is false; undefined if none given. */
export function allTrue(a?: Promise<boolean>, b?: Promise<boolean>): Promise<boolean> | undefined {
  if (!a || !b) return a ?? b;
  return new Promise((resolve) => {
    let left = 2;
    const one = (ok: boolean) => {
      if (!ok) resolve(false);
      else if (--left === 0) resolve(true);
    };
    a.then(one, () => resolve(false));
    b.then(one, () => resolve(false));
  });
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
