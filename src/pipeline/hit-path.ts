// The cache-hit path (issue #12): a GET that the in-process cache answers with a fresh HIT is
// written straight to the socket, before fastify routes it, with the same status, headers, body,
// log line, metrics and cache counters as the full pipeline (stages/cache.ts, respond.ts and the
// server's onResponse hook) would give it. It shares with the full pipeline the route matcher
// (route-match.ts, held to fastify's router by its test), the token map (auth/tokens.ts
// lookupToken) and the log line (ops/request-log.ts). Everything it needs is known in this process without
// waiting: the app (token hash map), the entry (the memory store, or the Redis store's
// in-process tier), the company's windows and the app's rate headroom as read within the last
// 200 ms (WindowTracker.known, RateGovernor.headroomIfKnown). When any of those is unknown, or
// the request is anything but the plain case (a query string, Cache-Control, X-Max-Wait-Ms, a
// body, HEAD, a check poll, a bad token or scope, an input the upstream would refuse, a stale or
// refreshable entry), it returns false and the full pipeline answers.
//
// Why a separate path: the full pipeline costs ~0.1 ms of CPU per HIT (fastify's hooks, the
// stages, one context, async store reads), a third of what a cached answer may cost to stay
// near nginx proxy_cache (docs/performance.md has the profile).
//
// Must never: answer what the full pipeline would answer differently (test/gateway/hit-path
// parity test), reach the store or the upstream, wait for anything, or throw to the server.
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { bearerToken, lookupToken } from '../auth/tokens.ts';
import type { CachePolicy } from '../cache/cache-keys.ts';
import type { CacheEntry } from '../cache/index.ts';
import type { AppConfig, GatewayConfig } from '../config/schema.ts';
import { chargeShape } from '../cost/estimate.ts';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import { nextRequestId } from '../ops/request-id.ts';
import {
  lineMiddle,
  logLineOf,
  type RequestLogLine,
  writeLineWithMiddle,
  writeRequestLog,
} from '../ops/request-log.ts';
import { matchRoute } from '../route-match.ts';
import type { ChargeShape, IncomingCall, UpstreamRoute } from '../route-table.ts';
import type { PipelineDeps } from './deps.ts';
import { rateLimitValues } from './respond.ts';

/** Cached GET routes a HIT can be written for: not public, not a check poll (ownership is checked first). */
const hitRoute = (route: UpstreamRoute): boolean =>
  route.method === 'GET' && route.cache !== null && route.scope !== 'public' && route.name !== 'check_poll';

/** What a URL means, computed once per URL (all of it is a pure function of the URL). */
interface Parsed {
  route: UpstreamRoute;
  call: IncomingCall;
  shape: ChargeShape | null;
  policy: CachePolicy;
}

/** URLs remembered (null: not a HIT candidate); past this the memo starts over. */
const URL_MEMO_MAX = 20_000;
const byUrl = new Map<string, Parsed | null>();

/** X-RateLimit-* as written, per memoized headroom value (the memo hands out the same object while it holds). */
const rateHeaders = new WeakMap<object, { values: string[]; lines: string }>();

function rateHeadersOf(headroom: object & Parameters<typeof rateLimitValues>[0]): {
  values: string[];
  lines: string;
} {
  let known = rateHeaders.get(headroom);
  if (!known) {
    const values = rateLimitValues(headroom);
    known = { values, lines: linesOf(values) };
    rateHeaders.set(headroom, known);
  }
  return known;
}

/** What a free read says it cost. */
const FREE_CHARGE = ['x-charged-minor', '0', 'x-cost-estimate-minor', '0'];
const FREE_CHARGE_LINES = 'x-charged-minor: 0\r\nx-cost-estimate-minor: 0\r\n';

/**
 * The app a connection's Authorization header was found to be, per configuration: a keep-alive
 * connection that sends the same header again is not hashed again. Only the connection's own
 * earlier header is compared with it, so no other client's token is ever compared.
 */
const AUTH = Symbol('cpgw.hitPathAuth');
type AuthSocket = Socket & { [AUTH]?: { header: string; config: GatewayConfig; app: AppConfig } };

/** One rendered answer of an entry for one Accept-Encoding value: headers (without per-call ones) and body. */
interface Prepared {
  status: number;
  /** Flat [name, value, ...] of the entry's headers, X-Cache, Vary, Content-Encoding, Content-Length. */
  head: string[];
  body: Buffer;
  /**
   * The body as latin1 text (the same bytes) when it is at most SINGLE_WRITE_MAX: Node then
   * writes the header block and the body as one string, one write() of one chunk, where a Buffer
   * body goes out as a writev() of two (the header block and the body; see docs/performance.md).
   */
  text: string | null;
  upstreamRequestId: string | undefined;
  /**
   * The request log line's middle (request-log.ts lineMiddle) for the last app and saving this
   * answer was logged with (its route is its entry's): its HITs' lines differ only in time,
   * request id and duration.
   */
  line: { app: string; saved: number | undefined; middle: string } | undefined;
  /**
   * The status line and `head` as header block lines (`name: value\r\n`), for the raw write
   * (rawHead); null when a name or value holds a byte Node's writeHead would refuse.
   */
  block: string | null;
}
/**
 * Bodies up to this size are also kept as text (above). The head and the text are joined into
 * one string per answer, which V8 flattens and Node copies again into its write buffer: cheap
 * for a small body, not for a large one. At 15 KB (the limit until then) a 15 KB brotli dossier
 * HIT cost ~1.5 µs more CPU than the 17 KB gzip one written as a Buffer (two copies of 15 KB and
 * a 15 KB string to collect per answer); at 4 KB both cost the same (docs/performance.md, third
 * pass). The text is a second copy of the body, kept as long as the entry is (see prepare()).
 */
const SINGLE_WRITE_MAX = 4 * 1024;
const prepared = new WeakMap<CacheEntry, Map<string, Prepared>>();

export interface HitPathOptions {
  /** The pipeline deps of the configuration in force now (a reload swaps them). */
  deps: () => PipelineDeps;
  /** True once shutdown began: the full pipeline answers (it adds Connection: close). */
  closing: () => boolean;
  metrics: GatewayMetrics;
  logger: Logger;
  /** The request log line's logger (logger.ts accessLogger). */
  access: Logger;
  /**
   * Set only when tracing is on (server.ts; src/ops/tracing.ts): told of each HIT written, to
   * make its one SERVER span. Absent (tracing off), nothing here looks at tracing at all.
   */
  traced?: (req: IncomingMessage, hit: TracedHit) => void;
}

/** What a traced HIT's span says (src/ops/tracing.ts Tracing.hit). */
export interface TracedHit {
  route: UpstreamRoute;
  app: string;
  status: number;
  requestId: string;
  /** performance.now() when the hit path first looked at the request. */
  started: number;
}

/** Returns the server's first look at a request: true when it answered, false to go on to fastify. */
export function makeHitPath(options: HitPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'GET' || options.closing()) return false;
    const started = performance.now();
    try {
      return answer(req, res, options, started);
    } catch (err) {
      if (res.headersSent) {
        options.logger.error({ err }, 'hit path failed after writing');
        return true;
      }
      return false;
    }
  };
}

/** The request headers the hit path looks at, read from rawHeaders (see plainHeaders). */
interface PlainHeaders {
  authorization: string | undefined;
  acceptEncoding: string | undefined;
}

/**
 * The Authorization and Accept-Encoding of a request the hit path may answer, read straight from
 * rawHeaders (req.headers joins or drops a header sent twice; rawHeaders shows it); null
 * when the request has a header that sends it to the full pipeline (Cache-Control,
 * X-Max-Wait-Ms, a body) or sends either of the two twice (Node would join or drop those).
 */
function plainHeaders(raw: string[]): PlainHeaders | null {
  let authorization: string | undefined;
  let acceptEncoding: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    // Only names of these lengths can matter: 13 authorization, cache-control, x-max-wait-ms;
    // 14 content-length; 15 accept-encoding; 17 transfer-encoding.
    const n = name.length;
    if (n !== 13 && n !== 14 && n !== 15 && n !== 17) continue;
    // The usual spellings without a lower-cased copy; any other spelling is lower-cased.
    const lower =
      name === 'authorization' || name === 'Authorization'
        ? 'authorization'
        : name === 'accept-encoding' || name === 'Accept-Encoding'
          ? 'accept-encoding'
          : name.toLowerCase();
    if (lower === 'authorization') {
      if (authorization !== undefined) return null;
      authorization = raw[i + 1]!;
    } else if (lower === 'accept-encoding') {
      if (acceptEncoding !== undefined) return null;
      acceptEncoding = raw[i + 1]!;
    } else if (
      lower === 'cache-control' ||
      lower === 'x-max-wait-ms' ||
      lower === 'content-length' ||
      lower === 'transfer-encoding'
    ) {
      return null;
    }
  }
  return { authorization, acceptEncoding };
}

function answer(req: IncomingMessage, res: ServerResponse, o: HitPathOptions, started: number): boolean {
  const url = req.url;
  if (url === undefined) return false;
  const h = plainHeaders(req.rawHeaders);
  if (!h) return false;
  const parsed = parse(url);
  if (!parsed) return false;
  const { route, shape, policy } = parsed;
  const deps = o.deps();
  const app = appOf(req, h.authorization, deps.config);
  const scope = route.scope;
  if (!app || scope === 'public' || (scope !== null && !app.scopes.includes(scope))) return false;

  let windowOpen = false;
  let windowExpires: string | undefined;
  const windows = shape?.covered ? deps.windows.known(shape.inn) : undefined;
  if (shape?.covered) {
    if (!windows) return false;
    windowOpen = deps.windows.covers(windows, shape.covered);
    windowExpires = deps.windows.expiresText(windows, shape.covered);
  }
  const headroom = deps.limits.headroomIfKnown(app.name, route.name);
  if (headroom === undefined) return false;
  const hit = deps.cache.hotHit(route.name, policy, app.name, windowOpen);
  if (!hit) return false;

  // Committed: from here on this path answers.
  const p = prepare(deps, hit.entry, h.acceptEncoding);
  const requestId = nextRequestId();
  const age = String(Math.floor(hit.ageMs / 1000));
  const rate = headroom ? rateHeadersOf(headroom) : null;
  // The entry's headers, then the per-call ones.
  if (p.block !== null && rawHeadFits(res)) {
    let head = `${p.block}x-request-id: ${requestId}\r\nage: ${age}\r\n`;
    if (shape !== null) head += FREE_CHARGE_LINES;
    if (windowExpires) head += `x-window-expires: ${windowExpires}\r\n`;
    if (rate) head += rate.lines;
    writeRawHead(res as RawResponse, p.status, head);
  } else {
    const out = [...p.head, 'x-request-id', requestId, 'age', age];
    if (shape !== null) out.push(...FREE_CHARGE);
    if (windowExpires) out.push('x-window-expires', windowExpires);
    if (rate) out.push(...rate.values);
    res.writeHead(p.status, out);
  }
  if (p.text !== null) res.end(p.text, 'latin1');
  else res.end(p.body);

  const { metrics } = o;
  const kind = shape?.kind ?? null;
  const saved = metrics.directCostOf(shape, windowOpen);
  const elapsedMs = performance.now() - started;
  metrics.hit(app.name, route.name, kind, saved, elapsedMs / 1000);
  if (o.traced) o.traced(req, { route, app: app.name, status: p.status, requestId, started });
  if (o.access.isLevelEnabled('info')) {
    const savedMinor = saved > 0 ? saved : undefined;
    let known = p.line;
    if (known?.app !== app.name || known.saved !== savedMinor) {
      const middle = lineMiddle(hitLine(p, route, app, savedMinor, 0));
      known = { app: app.name, saved: savedMinor, middle };
      p.line = known;
    }
    if (!writeLineWithMiddle(o.access, requestId, known.middle, elapsedMs))
      writeRequestLog(o.access, requestId, hitLine(p, route, app, savedMinor, elapsedMs));
  }
  return true;
}

/** A HIT's request log line. */
function hitLine(
  p: Prepared,
  route: UpstreamRoute,
  app: AppConfig,
  savedMinor: number | undefined,
  elapsedMs: number,
): RequestLogLine {
  // One literal, no spreads (Node 20 builds a literal with a spread on a slow path: object-copy.ts).
  return logLineOf(
    {
      route,
      app,
      cache: 'HIT',
      chargedMinor: 0,
      savedMinor,
      savedReason: savedMinor !== undefined ? 'cache' : undefined,
      upstreamRequestId: p.upstreamRequestId || undefined,
    },
    { route: route.url, method: 'GET', status: p.status, elapsedMs, clientGone: false },
  );
}

/** The URL's route, call, charge shape and cache key, or null when it is not a plain cached read. */
function parse(url: string): Parsed | null {
  const known = byUrl.get(url);
  if (known !== undefined) return known;
  const parsed = parseFresh(url);
  if (byUrl.size >= URL_MEMO_MAX) byUrl.clear();
  byUrl.set(url, parsed);
  return parsed;
}

function parseFresh(url: string): Parsed | null {
  if (url.includes('?') || url.includes('%')) return null;
  const matched = matchRoute('GET', url);
  if (!matched || !hitRoute(matched.route)) return null;
  const { route, params } = matched;
  const call: IncomingCall = { params, query: {}, body: undefined, idempotencyKey: undefined };
  if (!route.validate(call).ok) return null;
  const policy = route.cache?.(params, {}) ?? null;
  if (!policy) return null;
  return { route, call, shape: chargeShape(route.name, call), policy };
}

function appOf(req: IncomingMessage, header: string | undefined, config: GatewayConfig): AppConfig | null {
  if (header === undefined) return null;
  const socket = req.socket as AuthSocket;
  const seen = socket[AUTH];
  if (seen && seen.header === header && seen.config === config) return seen.app;
  const token = bearerToken(header);
  if (!token) return null;
  const app = lookupToken(token, config.apps);
  if (app) socket[AUTH] = { header, config, app };
  return app;
}

/**
 * The answer render() gives for this entry and Accept-Encoding, kept beside the entry (it lives
 * as long as the store keeps the entry) once it is final: not while a gzip copy is being made.
 */
function prepare(deps: PipelineDeps, entry: CacheEntry, acceptEncoding: string | undefined): Prepared {
  const key = acceptEncoding ?? '';
  let forEntry = prepared.get(entry);
  const known = forEntry?.get(key);
  if (known) return known;
  const rendered = deps.cache.render(entry, acceptEncoding, 'HIT');
  const head: string[] = [];
  for (const name in rendered.headers) if (name !== 'age') head.push(name, rendered.headers[name]!);
  head.push('content-length', String(rendered.body.length));
  const p: Prepared = {
    status: rendered.status,
    head,
    body: rendered.body,
    text: rendered.body.length <= SINGLE_WRITE_MAX ? rendered.body.toString('latin1') : null,
    upstreamRequestId: rendered.headers['x-upstream-request-id'],
    block: headerBlock(rendered.status, head),
    // Set here, not added at the first HIT: every Prepared keeps one shape (the hot path reads them).
    line: undefined,
  };
  if (!rendered.provisional) {
    if (!forEntry) {
      forEntry = new Map();
      prepared.set(entry, forEntry);
    }
    if (forEntry.size < 16) forEntry.set(key, p);
  }
  return p;
}

// The raw head. writeHead() validates every header name and value and builds the header block on
// each call; a HIT's block is the entry's (validated once, in prepare) plus a few per-call lines
// whose values are ours (an id, digits, an ISO time). rawHeadFits/writeRawHead hand Node that
// block as it would have built it, with Date, Connection and Keep-Alive as _storeHeader writes
// them (node:_http_outgoing, read in Node 20 and 24: the same in both), and Node sends it with
// the body in one write. Anything but the common case (keep-alive allowed and not at its last
// request, Date on, no header set before, a status with a body), or a Node whose response object
// lacks those fields, takes writeHead.

/** The fields of Node's ServerResponse that the raw head reads or writes (node:_http_outgoing). */
type RawResponse = ServerResponse & {
  _header: string | null;
  _headerSent: boolean;
  _hasBody: boolean;
  _removedConnection: boolean;
  _defaultKeepAlive: boolean;
  _keepAliveTimeout: number;
  _maxRequestsPerSocket: number | undefined;
  _expect_continue: boolean;
  chunkedEncoding: boolean;
  shouldKeepAlive: boolean;
  maxRequestsOnConnectionReached: boolean;
};

/** A header name Node accepts (its checkIsHttpToken). */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
/** A byte Node refuses in a header value (its checkInvalidHeaderChar). */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** `name: value\r\n` lines of a flat [name, value, ...] list. */
function linesOf(flat: readonly string[]): string {
  let lines = '';
  for (let i = 0; i < flat.length; i += 2) lines += `${flat[i]}: ${flat[i + 1]}\r\n`;
  return lines;
}

/** The status line and header lines of an entry's answer, or null when writeHead must judge them. */
function headerBlock(status: number, head: readonly string[]): string | null {
  const message = STATUS_CODES[status];
  if (message === undefined || status < 200 || status === 204 || status === 304) return null;
  for (let i = 0; i < head.length; i += 2)
    if (!TOKEN.test(head[i]!) || INVALID_VALUE.test(head[i + 1]!)) return null;
  return `HTTP/1.1 ${status} ${message}\r\n${linesOf(head)}`;
}

/** True when Node would write this response's head as writeRawHead does (see above). */
function rawHeadFits(res: ServerResponse): boolean {
  const r = res as RawResponse;
  return (
    r._header === null &&
    r._headerSent === false &&
    r._hasBody === true &&
    r._removedConnection === false &&
    r.chunkedEncoding === false &&
    r.shouldKeepAlive === true &&
    r.maxRequestsOnConnectionReached !== true &&
    r._expect_continue !== true &&
    r.sendDate === true &&
    typeof r._defaultKeepAlive === 'boolean' &&
    typeof r._keepAliveTimeout === 'number'
  );
}

/** The Date line, made once a second (as Node's utcDate). */
let dateLine = { until: 0, line: '' };
function dateLineNow(): string {
  const now = Date.now();
  if (now >= dateLine.until) {
    dateLine = { until: now - (now % 1000) + 1000, line: `Date: ${new Date(now).toUTCString()}\r\n` };
  }
  return dateLine.line;
}

/** Connection and Keep-Alive as _storeHeader writes them for a keep-alive answer with a length. */
let keepAlive = { timeout: Number.NaN, max: 0, lines: '' };
function keepAliveLines(r: RawResponse): string {
  const max = ~~(r._maxRequestsPerSocket ?? 0);
  const timeout = r._defaultKeepAlive ? r._keepAliveTimeout : 0;
  if (keepAlive.timeout !== timeout || keepAlive.max !== max) {
    let lines = 'Connection: keep-alive\r\n';
    if (timeout)
      lines += `Keep-Alive: timeout=${Math.floor(timeout / 1000)}${max > 0 ? `, max=${max}` : ''}\r\n`;
    keepAlive = { timeout, max, lines };
  }
  return keepAlive.lines;
}

/** Hands Node the whole head (block: status line and headers); end() then writes it with the body. */
function writeRawHead(r: RawResponse, status: number, block: string): void {
  r.statusCode = status;
  r.statusMessage = STATUS_CODES[status]!;
  r._header = `${block}${dateLineNow()}${keepAliveLines(r)}\r\n`;
  r._headerSent = false;
}
