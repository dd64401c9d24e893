// The gateway's fastify instance as a web server, before any gateway part is wired in: node:http
// with its deadlines (a slow sender cannot hold a connection), Node's own refusals and fastify's
// in the upstream's envelope (client-errors.ts), raw bodies, X-Request-Id on every answer, one
// key case for the JSON the gateway writes itself, the error handler and the 404 that turn a
// thrown error into one envelope, and the drain: from a drain or close() on, every answer
// carries Connection: close.
//
// Must never: listen (main.ts and tests do), answer a bad input with a 500 or in Node's or
// fastify's own format, or let a keep-alive socket hold close() up.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from 'fastify';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/schema.ts';
import { ApiError, sendError } from '../errors.ts';
import { snakeCaseKeys } from '../json-case.ts';
import { LazyChildLogger } from '../logger.ts';
import { nextRequestId } from '../ops/request-id.ts';
import { STORE_RETRY_AFTER } from '../pipeline/refusals.ts';
import { describeCause } from '../pipeline/respond.ts';
import { StoreUnavailableError } from '../store/store.ts';
import { clientErrorAnswer, refuseConnect, refusedWithoutHost } from './client-errors.ts';
import { noteRefusal } from './request-accounting.ts';

/** Sees a request before fastify does (the cache-hit path); true: it has answered. */
export type RawHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface AppOptions {
  /** Its `server` section (listener deadlines, body limit, proxies). */
  config: GatewayConfig;
  logger: Logger;
  /** A thrown StoreUnavailableError was answered 503 (the store-error metric). */
  onStoreError: () => void;
}

export interface GatewayApp {
  app: FastifyInstance;
  /** True once a drain or close() has begun. */
  closing: () => boolean;
  /** Sets the handler that sees each request before fastify; set once the pipeline exists. */
  answerFirst: (handler: RawHandler) => void;
}

const drainers = new WeakMap<FastifyInstance, () => void>();

/**
 * Starts a drain (SIGTERM, before close()): /readyz answers 503 from now on and every answer
 * carries Connection: close, while requests are still served (server.drainDelayMs in main.ts).
 */
export function drainGateway(app: FastifyInstance): void {
  drainers.get(app)?.();
}

export function createApp(o: AppOptions): GatewayApp {
  const { config } = o;
  const httpOptions = {
    connectionsCheckingInterval: Math.min(5_000, Math.ceil(config.server.requestTimeoutMs / 4)),
    // Node would answer a request without Host with a bare 400 (no envelope, no X-Request-Id);
    // the factory below answers it in the envelope instead.
    requireHostHeader: false,
  };
  let first: RawHandler | null = null;
  const app = Fastify({
    serverFactory: (handler) => {
      const server = createHttpServer(httpOptions, (req, res) => {
        if (refusedWithoutHost(req)) return;
        if (first?.(req, res)) return;
        handler(req, res);
      });
      server.on('connect', refuseConnect);
      // What fastify sets on a server it makes itself (lib/server.js getServerInstance).
      server.keepAliveTimeout = config.server.keepAliveTimeoutMs;
      server.requestTimeout = config.server.requestTimeoutMs;
      server.setTimeout(0);
      return server;
    },
    loggerInstance: o.logger as FastifyBaseLogger,
    // A request's child logger is made only when that request logs (most log nothing).
    childLoggerFactory: (logger, bindings, options) =>
      new LazyChildLogger(
        logger as Logger,
        bindings,
        options as Record<string, unknown>,
      ) as unknown as FastifyBaseLogger,
    // One log line per request is written by the onResponse hook (request-accounting.ts), not by fastify.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.server.bodyLimitBytes,
    trustProxy: config.server.trustProxy,
    genReqId: nextRequestId,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A slow sender cannot hold a connection: headers and the whole request have deadlines.
    requestTimeout: config.server.requestTimeoutMs,
    // Node looks for requests past their timeout this often (its default, 30 s, would let a slow
    // sender overstay a short timeout by that much).
    http: httpOptions,
    keepAliveTimeout: config.server.keepAliveTimeoutMs,
    // Node's own refusals (bad request line, headers too large, request timeout) in the
    // upstream's envelope with an X-Request-Id, never Node's bare text.
    clientErrorHandler: clientErrorAnswer,
    // fastify's refusals before routing (a malformed path such as /v1/banks/%FF).
    frameworkErrors: (err, request, rawReply) => {
      const refusal = new ApiError(
        'validation_failed',
        { fields: [{ field: 'path', code: 'invalid', message: err.message }] },
        undefined,
        { status: 400 },
      );
      sendError(
        (rawReply as unknown as FastifyReply).header('x-request-id', request.id),
        refusal,
        request.id,
      );
    },
  });
  app.server.headersTimeout = Math.min(config.server.headersTimeoutMs, config.server.requestTimeoutMs);

  // Bodies are kept raw: validation parses JSON itself so a bad body is a 422 in the
  // upstream's envelope, and the exact bytes go upstream.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // Graceful shutdown: once close() begins, every answer (including those already in
  // flight) tells the client to drop the connection, so close() is not held up by
  // keep-alive sockets that were busy when it started.
  let closing = false;
  drainers.set(app, () => {
    closing = true;
  });
  let idleSweep: ReturnType<typeof setInterval> | null = null;
  app.addHook('preClose', async () => {
    closing = true;
    // fastify closes the connections idle when close() starts; one that turns idle a moment
    // later would otherwise hold close() for the whole keep-alive timeout (72 s by default).
    idleSweep = setInterval(() => app.server.closeIdleConnections(), 100);
    idleSweep.unref();
  });
  app.addHook('onClose', async () => {
    if (idleSweep) clearInterval(idleSweep);
  });
  // The per-request hooks are callback style, not async: an async hook costs every request a
  // promise and a microtask hop for work that never waits (docs/performance.md, eighth pass).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // One field-name case for every JSON object the gateway writes itself (json-case.ts): admin
  // answers, the console's session, refusal envelopes. /v1 answers are bytes and never pass here.
  app.addHook('preSerialization', (request, _reply, payload, done) => {
    done(null, request.routeOptions.config?.jsonKeys === 'verbatim' ? payload : snakeCaseKeys(payload));
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  app.setErrorHandler((err: FastifyError | ApiError | Error, request, reply) => {
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else if (err instanceof StoreUnavailableError) {
      apiError = new ApiError('store_unavailable', {}, undefined, {
        cause: err,
        headers: { ...STORE_RETRY_AFTER },
      });
    } else if ('statusCode' in err && typeof err.statusCode === 'number' && err.statusCode < 500) {
      // fastify's own refusals (body too large, bad content type): a bad input, never a 500.
      apiError = ApiError.validation([
        { field: 'body', code: (err as FastifyError).code ?? 'invalid', message: err.message },
      ]);
    } else {
      request.log.error({ err }, 'unhandled error');
      apiError = new ApiError('internal_error');
    }
    if (err instanceof StoreUnavailableError) o.onStoreError();
    noteRefusal(request.ctx, apiError);
    if (apiError.status >= 500)
      request.log.warn({ code: apiError.code, cause: describeCause(apiError.cause) }, 'refused');
    return sendError(reply, apiError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new ApiError('not_found', {}, `No such endpoint: ${request.method} ${request.url.split('?')[0]}`),
    ),
  );

  return {
    app,
    closing: () => closing,
    answerFirst: (handler) => {
      first = handler;
    },
  };
}
