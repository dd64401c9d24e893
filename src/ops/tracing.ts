// OpenTelemetry traces of proxied /v1 calls (issue #31 item 7): a SERVER span per request, whose
// parent is the app's W3C `traceparent` when it sent one, with child spans where the request
// waited or spent: the rate queue, the charge gate, the coalescing follower wait, each upstream
// attempt (CLIENT, its span sent upstream as the `traceparent`) and the money store steps.
// Spans go out over OTLP/HTTP (JSON) in batches when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise nothing here is loaded (the SDK is imported
// only by startTracing), no span is made and a request's context carries no trace at all.
//
// A HIT the fast path (pipeline/hit-path.ts) writes gets one SERVER span, made after the answer
// through that path's `traced` hook, which server.ts sets only when tracing is on.
//
// Must never: load the SDK or make a span when tracing is off (the cache-hit fast path must not
// even look: its hook is absent), put an INN, a token, a body
// or a header value other than the trace context into a span, or throw into a request (an
// exporter failure is the SDK's to log and drop).
import type { Attributes, Context, Span, SpanKind, TextMapPropagator, Tracer } from '@opentelemetry/api';
import type { RequestContext } from '../pipeline/context.ts';
import type { TracedHit } from '../pipeline/hit-path.ts';

export const DEFAULT_SERVICE_NAME = 'counterparty-gateway';

export interface TracingOptions {
  /** Where spans are POSTed (OTLP/HTTP JSON), e.g. http://collector:4318/v1/traces. */
  url: string;
  /** resource service.name. */
  serviceName: string;
  /** Extra headers for the collector (OTEL_EXPORTER_OTLP_HEADERS / _TRACES_HEADERS). */
  headers?: Record<string, string>;
  /** How often a batch goes out (ms); the SDK's default (5000) unless set (OTEL_BSP_SCHEDULE_DELAY). */
  scheduledDelayMillis?: number;
}

/**
 * The tracing options the standard OpenTelemetry environment variables give, or null when no
 * OTLP endpoint is set (tracing off). OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is;
 * OTEL_EXPORTER_OTLP_ENDPOINT gets /v1/traces appended (the OTLP exporter specification).
 * OTEL_SDK_DISABLED=true turns it off whatever else is set.
 */
export function tracingOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): TracingOptions | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  let url: string;
  if (traces) url = traces;
  else if (base) url = `${base.replace(/\/+$/, '')}/v1/traces`;
  else return null;
  try {
    new URL(url);
  } catch {
    throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT: not a URL: ${url}`);
  }
  const headers = {
    ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    ...parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
  };
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  return {
    url,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(Number.isFinite(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {}),
  };
}

/** `k1=v1,k2=v2` (values percent-encoded), as OTEL_EXPORTER_OTLP_HEADERS is written. */
function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '').split(',')) {
    const at = part.indexOf('=');
    if (at <= 0) continue;
    const name = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Tracing off: the app's own `traceparent` (and its `tracestate`) go upstream unchanged, so a
 * trace the app started still reaches the vendor; a malformed one is not passed on.
 */
export function passTraceHeaders(
  from: Readonly<Record<string, string | string[] | undefined>>,
  to: Record<string, string>,
): void {
  const parent = from.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return;
  to.traceparent = parent;
  const state = from.tracestate;
  if (typeof state === 'string' && state.length <= 512) to.tracestate = state;
}

/** The route table's URL as an OpenTelemetry http.route: `/v1/companies/:inn` → `/v1/companies/{inn}`. */
export function routeTemplate(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The outcome facts the server span is closed with (read from the request's context). */
export interface RequestEnd {
  status: number;
}

/** The trace of one request: its SERVER span and the way to hang child spans under it. */
export interface RequestTrace {
  readonly span: Span;
  /** A child span of the server span, started now (INTERNAL unless kind is given). */
  child(name: string, attributes?: Attributes, kind?: SpanKind): Span;
  /** A child span that started at `startMs` (performance.timeOrigin-based ms: `now()`). */
  childSince(name: string, startMs: number, attributes?: Attributes): Span;
  /**
   * The CLIENT span of one upstream attempt, started now; its context is written into `headers`
   * (`traceparent`, and the app's `tracestate`) so the upstream's work is its child.
   */
  attempt(ctx: RequestContext, headers: Record<string, string>, attempt: number): Span;
  /** Ends the server span with the request's attributes (app, route, cache, charged, error). */
  end(ctx: RequestContext, end: RequestEnd): void;
}

/** A span ended with an error status and the given code (a refusal's, or a failure's kind). */
export function endWithError(span: Span | undefined, code: string): void {
  if (!span) return;
  span.setAttribute('error.type', code);
  span.setStatus({ code: 2 /* SpanStatusCode.ERROR */, message: code });
  span.end();
}

/** High-resolution wall-clock milliseconds, the unit span start times are given in. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export class Tracing {
  private readonly api: typeof import('@opentelemetry/api');
  private readonly tracer: Tracer;
  private readonly propagator: TextMapPropagator;
  private readonly provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> };
  private readonly upstreamHost: string | undefined;

  private constructor(parts: {
    api: typeof import('@opentelemetry/api');
    tracer: Tracer;
    propagator: TextMapPropagator;
    provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> };
    upstreamHost?: string;
  }) {
    this.api = parts.api;
    this.tracer = parts.tracer;
    this.propagator = parts.propagator;
    this.provider = parts.provider;
    this.upstreamHost = parts.upstreamHost;
  }

  /**
   * Loads the SDK and builds a tracer provider that batches spans to `options.url`. The
   * provider is this gateway's own (not registered globally), so two gateways in one process
   * (tests) each export to their own collector.
   */
  static async start(options: TracingOptions, upstreamUrl?: string): Promise<Tracing> {
    const [api, core, base, exporterMod, resources] = await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
    const exporter = new exporterMod.OTLPTraceExporter({
      url: options.url,
      ...(options.headers ? { headers: options.headers } : {}),
    });
    const provider = new base.BasicTracerProvider({
      resource: resources.resourceFromAttributes({ 'service.name': options.serviceName }),
      spanProcessors: [
        new base.BatchSpanProcessor(exporter, {
          ...(options.scheduledDelayMillis ? { scheduledDelayMillis: options.scheduledDelayMillis } : {}),
        }),
      ],
    });
    let upstreamHost: string | undefined;
    try {
      upstreamHost = upstreamUrl ? new URL(upstreamUrl).hostname : undefined;
    } catch {
      upstreamHost = undefined;
    }
    return new Tracing({
      api,
      tracer: provider.getTracer('counterparty-gateway'),
      propagator: new core.W3CTraceContextPropagator(),
      provider,
      ...(upstreamHost ? { upstreamHost } : {}),
    });
  }

  /** The SERVER span of a proxied request, a child of the app's `traceparent` when it sent one. */
  startRequest(
    method: string,
    routeUrl: string,
    routeName: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
  ): RequestTrace {
    const { api, tracer } = this;
    const parent = this.propagator.extract(api.ROOT_CONTEXT, headers, headerGetter);
    const template = routeTemplate(routeUrl);
    const span = tracer.startSpan(
      `${method} ${template}`,
      {
        kind: api.SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'http.route': template, 'cpgw.route': routeName },
      },
      parent,
    );
    const under: Context = api.trace.setSpan(parent, span);
    const propagator = this.propagator;
    const upstreamHost = this.upstreamHost;
    return {
      span,
      child: (name, attributes, kind) =>
        tracer.startSpan(
          name,
          { kind: kind ?? api.SpanKind.INTERNAL, ...(attributes ? { attributes } : {}) },
          under,
        ),
      childSince: (name, startMs, attributes) =>
        tracer.startSpan(name, { startTime: startMs, ...(attributes ? { attributes } : {}) }, under),
      attempt: (ctx, out, attempt) => {
        const s = tracer.startSpan(
          `upstream ${ctx.route.method} ${template}`,
          {
            kind: api.SpanKind.CLIENT,
            attributes: {
              'http.request.method': ctx.route.method,
              'http.route': template,
              'cpgw.attempt': attempt,
              ...(upstreamHost ? { 'server.address': upstreamHost } : {}),
            },
          },
          under,
        );
        // The app's tracestate rides along in `parent` and is written back out with the new span.
        propagator.inject(api.trace.setSpan(parent, s), out, headerSetter);
        return s;
      },
      end: (ctx, end) => {
        const attrs: Attributes = { 'http.response.status_code': end.status };
        if (ctx.app) attrs['cpgw.app'] = ctx.app.name;
        if (ctx.cache) attrs['cpgw.cache'] = ctx.cache;
        if (ctx.chargedMinor !== undefined) attrs['cpgw.charged_minor'] = ctx.chargedMinor;
        if (ctx.estimateMinor !== undefined) attrs['cpgw.estimate_minor'] = ctx.estimateMinor;
        if (ctx.queuedMs !== undefined) attrs['cpgw.queued_ms'] = ctx.queuedMs;
        if (ctx.upstreamAttempts !== undefined) attrs['cpgw.upstream_attempts'] = ctx.upstreamAttempts;
        attrs['cpgw.request_id'] = ctx.requestId;
        const code = ctx.refusal?.code ?? ctx.errorCode;
        if (code) {
          attrs['cpgw.error_code'] = code;
          attrs['error.type'] = code;
        }
        span.setAttributes(attrs);
        if (end.status >= 500)
          span.setStatus({ code: api.SpanStatusCode.ERROR, ...(code ? { message: code } : {}) });
        span.end();
      },
    };
  }

  /**
   * The one SERVER span of a HIT the fast path (pipeline/hit-path.ts) wrote: from when it first
   * looked at the request to now, a child of the app's traceparent, cache HIT, charged 0.
   */
  hit(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    method: string,
    hit: TracedHit,
  ): void {
    const { api } = this;
    const parent = this.propagator.extract(api.ROOT_CONTEXT, headers, headerGetter);
    const template = routeTemplate(hit.route.url);
    this.tracer
      .startSpan(
        `${method} ${template}`,
        {
          kind: api.SpanKind.SERVER,
          startTime: performance.timeOrigin + hit.started,
          attributes: {
            'http.request.method': method,
            'http.route': template,
            'cpgw.route': hit.route.name,
            'cpgw.app': hit.app,
            'cpgw.cache': 'HIT',
            'cpgw.charged_minor': 0,
            // Which path answered (a pipeline HIT's span has no such attribute).
            'cpgw.fast_path': true,
            'cpgw.request_id': hit.requestId,
            'http.response.status_code': hit.status,
          },
        },
        parent,
      )
      .end();
  }

  /** Sends what is batched (shutdown, tests). */
  async flush(): Promise<void> {
    await this.provider.forceFlush();
  }

  /** Sends what is batched and stops the exporter; spans made after this are dropped. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}

/**
 * Tracing as the environment asks for it: null (nothing loaded) without an OTLP endpoint.
 * A bad endpoint is a startup error, not a silent no-op.
 */
export async function startTracing(
  env: NodeJS.ProcessEnv = process.env,
  upstreamUrl?: string,
): Promise<Tracing | null> {
  const options = tracingOptionsFromEnv(env);
  return options ? Tracing.start(options, upstreamUrl) : null;
}

const headerGetter = {
  get(carrier: Readonly<Record<string, string | string[] | undefined>>, key: string) {
    return carrier[key];
  },
  keys(carrier: Readonly<Record<string, string | string[] | undefined>>) {
    return Object.keys(carrier);
  },
};

const headerSetter = {
  set(carrier: Record<string, string>, key: string, value: string) {
    carrier[key] = value;
  },
};
