// OpenTelemetry traces through real sockets: an OTLP/HTTP receiver (a node:http server taking
// POST /v1/traces as JSON) in front of which a real gateway and the emulator run. An app's
// traceparent makes the gateway's SERVER span its child; each upstream attempt (CLIENT) is the
// server span's child and is what the emulator receives as its traceparent (each attempt of a
// retried call its own); a paid call has its money step spans, a coalesced follower its wait
// span, a HIT (fast path or not) its server span; `cpgw start` reads the standard environment
// and flushes on shutdown. With tracing off the app's traceparent goes upstream unchanged and
// nothing is added.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startGateway } from '../../src/main.ts';
import { startTracing, type Tracing, tracingOptionsFromEnv } from '../../src/ops/tracing.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  status?: { code?: number };
}
interface Received {
  service: string | undefined;
  span: OtlpSpan;
}

const SERVER = 2;
const CLIENT = 3;

let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];
let posts = 0;
let tracing: Tracing;
let h: Harness;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      posts++;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{
          resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
          scopeSpans: Array<{ spans: OtlpSpan[] }>;
        }>;
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue;
        for (const ss of rs.scopeSpans) for (const span of ss.spans) received.push({ service, span });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  // The standard variables, as an operator would set them (the base endpoint gets /v1/traces).
  const started = await startTracing({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_BSP_SCHEDULE_DELAY: '50',
  });
  if (!started) throw new Error('tracing did not start with an endpoint set');
  tracing = started;
  h = await startHarness({ tracing });
});

afterAll(async () => {
  await h?.close();
  await tracing?.shutdown();
  await new Promise((resolve) => receiver?.close(resolve));
});

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

function attr(span: OtlpSpan, key: string): string | number | boolean | undefined {
  const v = span.attributes?.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  return v.doubleValue;
}

/** The spans of one trace once the span named `last` of it has arrived (flushing meanwhile). */
async function spansOf(traceId: string, until: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    await tracing.flush();
    const spans = received.filter((r) => r.span.traceId === traceId).map((r) => r.span);
    if (until(spans)) return spans;
    if (Date.now() > deadline)
      throw new Error(`spans of ${traceId} did not arrive: ${spans.map((s) => s.name).join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const named = (spans: OtlpSpan[], name: string) => spans.filter((s) => s.name === name);
const serverSpanOf = (spans: OtlpSpan[]) => spans.find((s) => s.kind === SERVER);

async function emulatorCallsFor(inn: string): Promise<Array<{ path: string; traceparent?: string }>> {
  const log = (await h.emu('/requests?route=company')) as {
    requests: Array<{ path: string; traceparent?: string }>;
  };
  return log.requests.filter((r) => r.path.endsWith(`/${inn}`));
}

describe('tracing on (OTLP/HTTP to a receiver)', () => {
  it('reads the standard environment: no endpoint means off; the base endpoint gets /v1/traces', () => {
    expect(tracingOptionsFromEnv({})).toBeNull();
    expect(
      tracingOptionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeNull();
    expect(tracingOptionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      url: 'http://c:4318/v1/traces',
      serviceName: 'counterparty-gateway',
    });
    expect(
      tracingOptionsFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:9/x',
        OTEL_SERVICE_NAME: 'gw-eu',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-team=ops',
      }),
    ).toEqual({
      url: 'http://t:9/x',
      serviceName: 'gw-eu',
      headers: { authorization: 'Bearer abc', 'x-team': 'ops' },
    });
    expect(() => tracingOptionsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(/not a URL/);
  });

  it("a paid read with the app's traceparent: server span under the app's span, attempt under it, sent upstream", async () => {
    const [inn] = knownInns(1, 3100);
    const traceId = hex(16);
    const appSpanId = hex(8);
    const res = await h.call('alpha', `/v1/companies/${inn}`, {
      headers: { traceparent: `00-${traceId}-${appSpanId}-01`, tracestate: 'app=42' },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const charged = Number(res.headers.get('x-charged-minor'));
    expect(charged).toBeGreaterThan(0);

    const spans = await spansOf(
      traceId,
      (s) => serverSpanOf(s) !== undefined && named(s, 'charge record').length > 0,
    );
    const server = serverSpanOf(spans)!;
    expect(server.name).toBe('GET /v1/companies/{inn}');
    expect(server.parentSpanId).toBe(appSpanId);
    expect(attr(server, 'cpgw.app')).toBe('alpha');
    expect(attr(server, 'cpgw.route')).toBe('company');
    expect(attr(server, 'http.route')).toBe('/v1/companies/{inn}');
    expect(attr(server, 'cpgw.cache')).toBe('MISS');
    expect(attr(server, 'cpgw.charged_minor')).toBe(charged);
    expect(attr(server, 'http.response.status_code')).toBe(200);
    expect(received.find((r) => r.span === server)?.service).toBe('counterparty-gateway');
    // No INN in any span name or attribute.
    expect(JSON.stringify(spans)).not.toContain(inn);

    const attempts = spans.filter((s) => s.kind === CLIENT);
    expect(attempts).toHaveLength(1);
    const attempt = attempts[0]!;
    expect(attempt.name).toBe('upstream GET /v1/companies/{inn}');
    expect(attempt.parentSpanId).toBe(server.spanId);
    expect(attr(attempt, 'http.response.status_code')).toBe(200);
    // The waits and money steps, each a child of the server span.
    for (const name of ['rate queue wait', 'charge gate wait', 'charge open', 'charge record']) {
      const [span] = named(spans, name);
      expect(span, name).toBeDefined();
      expect(span!.parentSpanId, name).toBe(server.spanId);
    }
    expect(attr(named(spans, 'charge gate wait')[0]!, 'cpgw.gate')).toBe('charged');
    expect(attr(named(spans, 'charge record')[0]!, 'cpgw.charged_minor')).toBe(charged);

    // The upstream received the attempt's span as its parent, in the app's trace.
    const calls = await emulatorCallsFor(inn!);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.traceparent).toBe(`00-${traceId}-${attempt.spanId}-01`);
  });

  it('a retried call: one CLIENT span per attempt, each sent upstream as its own traceparent', async () => {
    const [inn] = knownInns(1, 3400);
    await h.emu('/faults', { route: 'company', count: 1, status: 503 });
    const traceId = hex(16);
    const res = await h.call('alpha', `/v1/companies/${inn}`, {
      headers: { traceparent: `00-${traceId}-${hex(8)}-01` },
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const spans = await spansOf(
      traceId,
      (s) => serverSpanOf(s) !== undefined && s.filter((x) => x.kind === CLIENT).length >= 2,
    );
    const server = serverSpanOf(spans)!;
    expect(attr(server, 'cpgw.upstream_attempts')).toBe(2);
    const attempts = spans
      .filter((s) => s.kind === CLIENT)
      .sort((a, b) => Number(attr(a, 'cpgw.attempt')) - Number(attr(b, 'cpgw.attempt')));
    expect(attempts.map((a) => attr(a, 'http.response.status_code'))).toEqual([503, 200]);
    expect(attempts.map((a) => a.status?.code ?? 0)).toEqual([2, 0]);
    for (const a of attempts) expect(a.parentSpanId).toBe(server.spanId);
    expect(named(spans, 'rate queue wait')).toHaveLength(2);
    const calls = await emulatorCallsFor(inn!);
    expect(calls.map((c) => c.traceparent)).toEqual(attempts.map((a) => `00-${traceId}-${a.spanId}-01`));
  });

  it('HITs are traced, on the fast path too: one SERVER span each, under the app span, charged 0', async () => {
    const [inn] = knownInns(1, 3100);
    // Back to back: after the first, the fast path's memos (windows, headroom) are warm.
    const sent: Array<{ traceId: string; appSpanId: string; requestId: string | null }> = [];
    for (let i = 0; i < 8; i++) {
      const traceId = hex(16);
      const appSpanId = hex(8);
      const res = await h.call('beta', `/v1/companies/${inn}`, {
        headers: { traceparent: `00-${traceId}-${appSpanId}-01` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-cache')).toBe('HIT');
      await res.arrayBuffer();
      sent.push({ traceId, appSpanId, requestId: res.headers.get('x-request-id') });
    }
    let fast = 0;
    for (const { traceId, appSpanId, requestId } of sent) {
      const spans = await spansOf(traceId, (s) => serverSpanOf(s) !== undefined);
      expect(spans).toHaveLength(1);
      const server = serverSpanOf(spans)!;
      expect(server.name).toBe('GET /v1/companies/{inn}');
      expect(server.parentSpanId).toBe(appSpanId);
      expect(attr(server, 'cpgw.cache')).toBe('HIT');
      expect(attr(server, 'cpgw.app')).toBe('beta');
      expect(attr(server, 'cpgw.charged_minor')).toBe(0);
      expect(attr(server, 'http.response.status_code')).toBe(200);
      expect(attr(server, 'cpgw.request_id')).toBe(requestId);
      if (attr(server, 'cpgw.fast_path') === true) fast++;
    }
    expect(fast).toBeGreaterThan(0);
    expect(await emulatorCallsFor(inn!)).toHaveLength(1);
  });

  it('coalesced followers have their wait span; one upstream attempt for all', async () => {
    const [inn] = knownInns(1, 3200);
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 400 });
    const traceIds = [hex(16), hex(16), hex(16)];
    const results = await Promise.all(
      traceIds.map((t) =>
        h.call('alpha', `/v1/companies/${inn}`, { headers: { traceparent: `00-${t}-${hex(8)}-01` } }),
      ),
    );
    for (const r of results) {
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    }
    const caches = results.map((r) => r.headers.get('x-cache'));
    expect(caches.filter((c) => c === 'MISS')).toHaveLength(1);
    expect(caches.filter((c) => c === 'COALESCED')).toHaveLength(2);
    for (const [i, t] of traceIds.entries()) {
      const spans = await spansOf(t, (s) => serverSpanOf(s) !== undefined);
      const server = serverSpanOf(spans)!;
      expect(attr(server, 'cpgw.cache')).toBe(caches[i]);
      const waits = named(spans, 'coalesce follower wait');
      if (caches[i] === 'COALESCED') {
        expect(waits).toHaveLength(1);
        expect(waits[0]!.parentSpanId).toBe(server.spanId);
        expect(spans.filter((s) => s.kind === CLIENT)).toHaveLength(0);
      } else {
        expect(waits).toHaveLength(0);
        expect(spans.filter((s) => s.kind === CLIENT)).toHaveLength(1);
      }
    }
  });

  it('a refusal carries its error code and status; without a traceparent a new trace starts', async () => {
    const before = received.length;
    const res = await h.call('alpha', '/v1/companies/12345');
    expect(res.status).toBe(422);
    const code = ((await res.json()) as { error: { code: string } }).error.code;
    const requestId = res.headers.get('x-request-id');
    const deadline = Date.now() + 10_000;
    let server: OtlpSpan | undefined;
    while (!server && Date.now() < deadline) {
      await tracing.flush();
      server = received.slice(before).find((r) => attr(r.span, 'cpgw.request_id') === requestId)?.span;
      if (!server) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(server).toBeDefined();
    expect(server!.parentSpanId ?? '').toBe('');
    expect(attr(server!, 'cpgw.error_code')).toBe(code);
    expect(attr(server!, 'http.response.status_code')).toBe(422);
    expect(posts).toBeGreaterThan(0);
  });
});

describe('tracing off (no endpoint)', () => {
  let off: Harness;
  beforeAll(async () => {
    expect(await startTracing({})).toBeNull();
    off = await startHarness();
  });
  afterAll(() => off?.close());

  it("passes the app's traceparent and tracestate upstream unchanged and adds none; exports nothing", async () => {
    const [withParent, without, malformed] = knownInns(3, 3300);
    const parent = `00-${hex(16)}-${hex(8)}-01`;
    const before = received.length;
    for (const [inn, headers] of [
      [withParent, { traceparent: parent, tracestate: 'app=1' }],
      [without, {}],
      [malformed, { traceparent: 'zz-not-a-trace' }],
    ] as const) {
      const r = await off.call('alpha', `/v1/companies/${inn}`, { headers });
      expect(r.status).toBe(200);
      await r.arrayBuffer();
    }
    const log = (await off.emu('/requests?route=company')) as {
      requests: Array<{ path: string; traceparent?: string }>;
    };
    const of = (inn: string) => log.requests.filter((r) => r.path.endsWith(`/${inn}`));
    expect(of(withParent!).map((r) => r.traceparent)).toEqual([parent]);
    expect(of(without!).map((r) => r.traceparent)).toEqual([undefined]);
    expect(of(malformed!).map((r) => r.traceparent)).toEqual([undefined]);
    await tracing.flush();
    expect(received.slice(before).filter((r) => r.span.traceId === parent.slice(3, 35))).toHaveLength(0);
  });
});

describe('cpgw start with the standard environment', () => {
  it('exports the spans of a request when the gateway stops (flush on shutdown), as OTEL_SERVICE_NAME', async () => {
    const state = mkdtempSync(join(tmpdir(), 'cpgw-state-'));
    try {
      const gw = await startGateway({
        env: {
          CPGW_PORT: '0',
          CPGW_STATE_DIR: state,
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiverUrl}/v1/traces`,
          OTEL_SERVICE_NAME: 'cpgw-main-test',
          // No batch goes out on its own during the test: only the shutdown's flush sends it.
          OTEL_BSP_SCHEDULE_DELAY: '600000',
        },
        logger: createLogger('silent'),
      });
      const traceId = hex(16);
      let closed = false;
      try {
        const res = await fetch(`${gw.url}/v1/companies/7707083893`, {
          headers: { authorization: `Bearer ${gw.demoToken}`, traceparent: `00-${traceId}-${hex(8)}-01` },
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        expect(received.filter((r) => r.span.traceId === traceId)).toHaveLength(0);
        await gw.close();
        closed = true;
      } finally {
        if (!closed) await gw.close();
      }
      const spans = received.filter((r) => r.span.traceId === traceId);
      expect(spans.map((r) => r.service)).toContain('cpgw-main-test');
      const server = spans.find((r) => r.span.kind === SERVER)!.span;
      expect(server.name).toBe('GET /v1/companies/{inn}');
      expect(
        spans.filter((r) => r.span.kind === CLIENT && r.span.parentSpanId === server.spanId),
      ).toHaveLength(1);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
