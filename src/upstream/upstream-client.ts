// The only code that talks to the upstream and the only code that knows the upstream key.
// One keep-alive undici Pool; one overall deadline per call; failures come back as
// UpstreamFailure values (timeout, connection, aborted) for the caller to map. It never
// retries by itself: retry policy (idempotency keys, backoff) belongs to the caller.
import { Pool } from 'undici';
import { Waker, type WakeSignal } from '../clock.ts';
import { copyWith } from '../object-copy.ts';

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** Path and query as the app sent them, e.g. "/v1/search?q=abc". */
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  timeoutMs: number;
  /** Aborted when the client goes away. */
  signal?: WakeSignal;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  durationMs: number;
}

export type UpstreamFailureKind = 'timeout' | 'connection' | 'aborted';

export class UpstreamFailure extends Error {
  constructor(
    readonly kind: UpstreamFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UpstreamFailure';
  }
}

export interface UpstreamClientOptions {
  url: string;
  apiKey: string;
  connections: number;
}

export class UpstreamClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly authorization: string;
  readonly origin: string;

  constructor(options: UpstreamClientOptions) {
    const url = new URL(options.url);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.authorization = `Bearer ${options.apiKey}`;
    this.pool = new Pool(url.origin, {
      connections: options.connections,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      pipelining: 1,
    });
  }

  async request(req: UpstreamRequest): Promise<UpstreamResponse> {
    const started = performance.now();
    // One Waker and one timer per call, both let go when it ends; undici takes the Waker as its
    // signal (an EventTarget-like: addEventListener, removeEventListener, aborted). Not
    // AbortSignal.timeout or AbortSignal.any, which keep a timer and a signal alive for the whole
    // timeout and build a DOMException when it fires; not an AbortController either, whose
    // EventTarget costs more to make than the rest of this function (issue 33).
    const abort = new Waker();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.wake();
    }, req.timeoutMs);
    const clientGone = () => abort.wake();
    if (req.signal?.aborted) abort.wake();
    else req.signal?.addEventListener('abort', clientGone, { once: true });
    try {
      const res = await this.pool.request({
        method: req.method,
        path: this.basePath + req.path,
        headers: copyWith(req.headers ?? {}, { authorization: this.authorization }),
        body: req.body,
        // undici's types name AbortSignal and EventEmitter; it asks only for these members.
        signal: abort as unknown as AbortSignal,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      });
      const body = Buffer.from(await res.body.arrayBuffer());
      const headers: Record<string, string> = {};
      for (const name in res.headers) {
        const value = res.headers[name];
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      return { status: res.statusCode, headers, body, durationMs: performance.now() - started };
    } catch (err) {
      if (req.signal?.aborted) throw new UpstreamFailure('aborted', 'the client went away', { cause: err });
      if (timedOut || isTimeout(err)) {
        throw new UpstreamFailure('timeout', `no answer within ${req.timeoutMs} ms`, { cause: err });
      }
      throw new UpstreamFailure('connection', `cannot reach the upstream: ${describe(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', clientGone);
    }
  }

  /** Cheap reachability probe for /readyz: the key-less OpenAPI document. */
  async probe(timeoutMs: number): Promise<void> {
    const res = await this.request({ method: 'GET', path: '/v1/openapi.json', timeoutMs });
    if (res.status >= 500) throw new UpstreamFailure('connection', `upstream answered ${res.status}`);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

function isTimeout(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  );
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? String(err);
}
