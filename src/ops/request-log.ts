// The one log line per answer, built and written here for both writers: the server's onResponse
// hook (server/request-accounting.ts) and the cache-hit path (pipeline/hit-path.ts): who asked
// what, how it was answered and what it cost. Fields: app, route, method, status, error (envelope code),
// reason (why a 402/429/5xx refusal), cache (X-Cache), charged, saved and savedReason (README
// "Savings"), upstreamRequestId, queuedMs, durationMs, upstreamMs, attempts. Every answer writes
// one at the default level, so the access logger's lines are formatted here rather than by pino's
// general path (formatRequestLine: ~2 µs a line against ~7 on a 2-core VM), in pino's format.
// Must never log the INN, a token, a header value other than the upstream's request id, or a body;
// or write a line other than the one pino would write for the same fields (request-log-line.test.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { accessSinkOf } from '../logger.ts';
import type { RequestContext } from '../pipeline/context.ts';

/** What of a request's context the log line reads (the hit path has these and no more). */
export type LoggedContext = Pick<RequestContext, 'route' | 'app'> &
  Pick<
    RequestContext,
    | 'errorCode'
    | 'refusalReason'
    | 'cache'
    | 'chargedMinor'
    | 'savedMinor'
    | 'savedReason'
    | 'upstreamRequestId'
    | 'queuedMs'
    | 'upstreamMs'
    | 'upstreamAttempts'
  >;

/** The facts of the exchange itself, beside the context. */
export interface ExchangeFacts {
  /** The route pattern, when no context names the route. */
  route: string | null;
  method: string;
  status: number;
  elapsedMs: number;
  clientGone: boolean;
}

export interface RequestLogLine {
  app: string | null;
  route: string | null;
  method: string;
  status: number;
  error?: string | undefined;
  reason?: string | undefined;
  cache: string | null;
  charged: number;
  saved?: number | undefined;
  savedReason?: string | undefined;
  upstreamRequestId?: string | undefined;
  queuedMs?: number | undefined;
  durationMs: number;
  upstreamMs?: number | undefined;
  attempts?: number | undefined;
  clientGone?: true | undefined;
}

const round2 = (ms: number) => Math.round(ms * 100) / 100;

export function requestLogLine(request: FastifyRequest, reply: FastifyReply): RequestLogLine {
  return logLineOf(request.ctx, {
    route: request.routeOptions.url ?? null,
    method: request.method,
    status: reply.statusCode,
    elapsedMs: reply.elapsedTime,
    clientGone: request.raw.destroyed && !reply.raw.writableFinished,
  });
}

/** The log line of one answer from its context and the facts of the exchange (the hit path writes it too). */
export function logLineOf(ctx: LoggedContext | undefined, facts: ExchangeFacts): RequestLogLine {
  return {
    app: ctx?.app?.name ?? null,
    route: ctx?.route.name ?? facts.route,
    method: facts.method,
    status: facts.status,
    error: ctx?.errorCode,
    reason: ctx?.refusalReason,
    cache: ctx?.cache ?? null,
    charged: ctx?.chargedMinor ?? 0,
    saved: ctx?.savedMinor,
    savedReason: ctx?.savedReason,
    upstreamRequestId: ctx?.upstreamRequestId,
    queuedMs: ctx?.queuedMs !== undefined ? Math.round(ctx.queuedMs) : undefined,
    durationMs: round2(facts.elapsedMs),
    upstreamMs: ctx?.upstreamMs !== undefined ? round2(ctx.upstreamMs) : undefined,
    attempts: ctx?.upstreamAttempts,
    clientGone: facts.clientGone ? true : undefined,
  };
}

/**
 * Writes one answer's log line to the access logger (the message and reqId every line has). An
 * access logger made by logger.ts accessLogger() gets the line written here, as pino would write
 * it (formatRequestLine); any other goes through pino.
 */
export function writeRequestLog(access: Logger, reqId: string, line: RequestLogLine): void {
  if (!access.isLevelEnabled('info')) return;
  const sink = accessSinkOf(access);
  if (sink) sink.stream.write(formatRequestLine(sink.bindings, reqId, line, Date.now()));
  else access.info({ reqId, ...line }, 'request');
}

/** The last line's second as ISO text without its milliseconds (`2026-11-29T08:30:15.`). */
let isoSecond = Number.NaN;
let isoSecondText = '';

/** `new Date(now).toISOString()` for a whole-ms `now`, its second's text made once a second (~1.4 µs each on a 2-core VM). */
function isoTime(now: number): string {
  const second = Math.floor(now / 1000);
  const ms = now - second * 1000;
  if (second !== isoSecond || !Number.isInteger(ms)) {
    const iso = new Date(now).toISOString();
    if (!Number.isInteger(ms)) return iso;
    isoSecond = second;
    isoSecondText = iso.slice(0, -4);
  }
  return `${isoSecondText}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`;
}

/** A JSON string: as is when nothing in it needs escaping (the usual names, codes and ids). */
function jsonString(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || c > 0x7e) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** A JSON number as pino writes one (not finite: null). */
function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

const orNull = (s: string | null) => (s === null ? 'null' : jsonString(s));

/**
 * pino's info line for `{ reqId, ...line }` with message "request": level, time (ISO, as
 * pino.stdTimeFunctions.isoTime), the logger's bindings, then reqId and the line's fields in
 * their order, an undefined field left out; one line, newline-terminated.
 */
export function formatRequestLine(
  bindings: string,
  reqId: string,
  line: RequestLogLine,
  now: number,
): string {
  let s = `${lineStart(bindings, reqId, now)}${lineMiddle(line)},"durationMs":${jsonNumber(line.durationMs)}`;
  if (line.upstreamMs !== undefined) s += `,"upstreamMs":${jsonNumber(line.upstreamMs)}`;
  if (line.attempts !== undefined) s += `,"attempts":${jsonNumber(line.attempts)}`;
  if (line.clientGone !== undefined) s += ',"clientGone":true';
  return `${s},"msg":"request"}\n`;
}

/** A line up to its request id: level, time, the logger's bindings, reqId. */
function lineStart(bindings: string, reqId: string, now: number): string {
  return `{"level":30,"time":"${isoTime(now)}"${bindings},"reqId":${jsonString(reqId)}`;
}

/**
 * The fields of a line from "app" through "queuedMs", as formatRequestLine writes them: all that
 * tells one answer's line from another's but its time, request id and the fields after (duration,
 * upstream time, attempts, client gone). The HITs of one entry for one app share it (hit-path.ts
 * keeps it with the rendered answer: ~0.3 µs of a ~18 µs HIT on Node 24, bench/request-log.ts).
 */
export function lineMiddle(line: RequestLogLine): string {
  let s = `,"app":${orNull(line.app)},"route":${orNull(line.route)},"method":${jsonString(line.method)},"status":${jsonNumber(line.status)}`;
  if (line.error !== undefined) s += `,"error":${jsonString(line.error)}`;
  if (line.reason !== undefined) s += `,"reason":${jsonString(line.reason)}`;
  s += `,"cache":${orNull(line.cache)},"charged":${jsonNumber(line.charged)}`;
  if (line.saved !== undefined) s += `,"saved":${jsonNumber(line.saved)}`;
  if (line.savedReason !== undefined) s += `,"savedReason":${jsonString(line.savedReason)}`;
  if (line.upstreamRequestId !== undefined) s += `,"upstreamRequestId":${jsonString(line.upstreamRequestId)}`;
  if (line.queuedMs !== undefined) s += `,"queuedMs":${jsonNumber(line.queuedMs)}`;
  return s;
}

/**
 * Writes the line of an answer whose middle (lineMiddle) the caller kept and that has no field
 * after its duration (a cache HIT's): the line formatRequestLine would write for it. False, and
 * nothing written, when the access logger is not one accessLogger() made (pino must format it:
 * the caller writes the whole line with writeRequestLog).
 */
export function writeLineWithMiddle(
  access: Logger,
  reqId: string,
  middle: string,
  elapsedMs: number,
): boolean {
  const sink = accessSinkOf(access);
  if (!sink) return false;
  sink.stream.write(
    `${lineStart(sink.bindings, reqId, Date.now())}${middle},"durationMs":${jsonNumber(round2(elapsedMs))},"msg":"request"}\n`,
  );
  return true;
}
