// The only code that talks to the upstream and the only code that knows the upstream key.
// One keep-alive undici Pool; one overall deadline per call; failures come back as
// UpstreamFailure values (timeout, connection, aborted) for the caller to map. It never
// retries by itself: retry policy (idempotency keys, backoff) belongs to the caller.
import { type Dispatcher, Pool } from 'undici';
import type { WakeSignal } from '../clock.ts';
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
    // One timer per call, let go when it ends; no AbortController or AbortSignal.timeout, whose
    // EventTargets cost more to make than the rest of this function (issue 33). The call goes
    // through undici's dispatch with a handler of its own, not request(): request() wraps the
    // answer in a Readable stream and reads it back through promises, ~40 µs of CPU and ~35 µs of
    // latency a call here (docs/performance.md, tenth pass); the handler keeps the chunks (a
    // one-chunk answer is that chunk). A stop (the deadline, the client gone) aborts through the
    // dispatch controller; one that comes while the call waits for a connection is kept and ends
    // the call when it gets one, before a byte is sent (as request() does with a signal).
    let timedOut = false;
    let controller: Dispatcher.DispatchController | null = null;
    let stopped: Error | null = null;
    const stop = (reason: Error) => {
      stopped ??= reason;
      controller?.abort(stopped);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop(new Error(`no answer within ${req.timeoutMs} ms`));
    }, req.timeoutMs);
    const clientGone = () => stop(new Error('the client went away'));
    if (req.signal?.aborted) clientGone();
    else req.signal?.addEventListener('abort', clientGone, { once: true });
    try {
      return await new Promise<UpstreamResponse>((resolve, reject) => {
        let status = 0;
        const headers: Record<string, string> = {};
        const chunks: Buffer[] = [];
        let size = 0;
        this.pool.dispatch(
          {
            origin: this.origin,
            method: req.method,
            path: this.basePath + req.path,
            headers: copyWith(req.headers ?? {}, { authorization: this.authorization }),
            body: req.body,
            headersTimeout: req.timeoutMs,
            bodyTimeout: req.timeoutMs,
          },
          {
            onRequestStart(c) {
              controller = c;
              // Stopped while the call waited for a connection: it ends before a byte is sent.
              if (stopped) c.abort(stopped);
            },
            onResponseStart(_c, statusCode, raw) {
              status = statusCode;
              for (const name in raw) {
                const value = raw[name];
                if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
              }
            },
            onResponseData(_c, chunk) {
              chunks.push(chunk);
              size += chunk.length;
            },
            onResponseEnd() {
              const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
              resolve({ status, headers, body, durationMs: performance.now() - started });
            },
            onResponseError(_c, error) {
              reject(error);
            },
          },
        );
      });
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
