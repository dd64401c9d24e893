// The request log line (src/ops/request-log.ts): the access logger's lines are written by the
// gateway itself, not by pino's general path, and must be the very lines pino would write for
// `access.info({ reqId, ...line }, 'request')`: same fields, order, escaping and numbers.
import type { DestinationStream } from 'pino';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLogger, accessSinkOf, createLogger } from '../../src/logger.ts';
import {
  type ExchangeFacts,
  formatRequestLine,
  type LoggedContext,
  lineMiddle,
  logLineOf,
  type RequestLogLine,
  writeLineWithMiddle,
  writeRequestLog,
} from '../../src/ops/request-log.ts';

function capture(): DestinationStream & { lines: string[] } {
  const lines: string[] = [];
  return { lines, write: (s: string) => void lines.push(s) };
}

/** The time is the one value the two writers take at different instants. */
const sameTime = (s: string) => s.replace(/"time":"[^"]*"/, '"time":"T"');

/** A line as the gateway makes one (logLineOf: every field, in its order, some undefined). */
function lineOf(
  ctx: Partial<Record<keyof LoggedContext, unknown>> | undefined,
  facts: Partial<ExchangeFacts> = {},
) {
  return logLineOf(ctx as LoggedContext | undefined, {
    route: null,
    method: 'GET',
    status: 200,
    elapsedMs: 0.123,
    clientGone: false,
    ...facts,
  });
}

const app = (name: string) => ({ name });
const route = (name: string) => ({ name });
const base = lineOf({ app: app('billing'), route: route('company'), cache: 'HIT', chargedMinor: 0 });

const LINES: Array<[string, RequestLogLine]> = [
  [
    'a HIT',
    lineOf({
      app: app('billing'),
      route: route('company'),
      cache: 'HIT',
      chargedMinor: 0,
      savedMinor: 4900,
      savedReason: 'cache',
      upstreamRequestId: 'up-1',
    }),
  ],
  [
    'every field',
    lineOf(
      {
        app: app('risk'),
        route: route('section'),
        errorCode: 'upstream_unavailable',
        refusalReason: 'timeout',
        cache: 'MISS',
        chargedMinor: 9900,
        savedMinor: 0,
        savedReason: 'window',
        upstreamRequestId: '7f3c-1',
        queuedMs: 12.4,
        upstreamMs: 1200.011,
        upstreamAttempts: 3,
      },
      { status: 502, elapsedMs: 1234.567, clientGone: true },
    ),
  ],
  ['no context', lineOf(undefined, { route: '/v1/companies/:inn', status: 401 })],
  ['no context, no route', lineOf(undefined, { method: 'POST', status: 404 })],
  [
    'strings that need escaping',
    lineOf({
      app: app('billing'),
      route: route('company'),
      errorCode: 'bad "code" \\ here\nnext\ttab\u0001',
      upstreamRequestId: 'юникод-é-😀-\u007f',
      refusalReason: 'x'.repeat(150),
      cache: 'MISS',
    }),
  ],
  [
    'numbers that are not finite',
    lineOf(
      { app: app('a'), route: route('bank'), queuedMs: Number.POSITIVE_INFINITY },
      { elapsedMs: Number.NaN },
    ),
  ],
];

describe('the request log line', () => {
  it.each(LINES)('is the line pino writes: %s', (_name, line) => {
    const out = capture();
    const access = accessLogger(createLogger('info', out));
    const sink = accessSinkOf(access);
    expect(sink).toBeDefined();
    access.info({ reqId: 'req-"1"', ...line }, 'request');
    const ours = formatRequestLine(sink!.bindings, 'req-"1"', line, Date.now());
    expect(out.lines).toHaveLength(1);
    expect(sameTime(ours)).toBe(sameTime(out.lines[0]!));
    JSON.parse(ours);
  });

  it('writes the line to the access logger’s destination, with the time of the write', () => {
    const out = capture();
    const access = accessLogger(createLogger('info', out));
    // Not through pino's general path (what this is for).
    access.info = (() => {
      throw new Error('pino path taken');
    }) as typeof access.info;
    const before = Date.now();
    writeRequestLog(access, 'abc', LINES[0]![1]);
    const after = Date.now();
    expect(out.lines).toHaveLength(1);
    const parsed = JSON.parse(out.lines[0]!) as Record<string, unknown>;
    expect(parsed).toMatchObject({
      level: 30,
      service: 'cpgw',
      reqId: 'abc',
      app: 'billing',
      msg: 'request',
    });
    const at = Date.parse(parsed.time as string);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(after);
  });

  it('writes nothing when the access logger is above info or request lines are off', () => {
    const out = capture();
    writeRequestLog(accessLogger(createLogger('warn', out)), 'a', base);
    writeRequestLog(accessLogger(createLogger('info', out), false), 'b', base);
    expect(out.lines).toEqual([]);
  });

  // The hit path keeps a HIT's middle with the rendered answer and writes only time, id and duration.
  const hits = LINES.filter(
    ([, l]) => l.upstreamMs === undefined && l.attempts === undefined && !l.clientGone,
  );
  it.each(hits)('from a kept middle, is the same line: %s', (_name, line) => {
    const out = capture();
    const access = accessLogger(createLogger('info', out));
    expect(writeLineWithMiddle(access, 'req-"2"', lineMiddle(line), line.durationMs)).toBe(true);
    writeRequestLog(access, 'req-"2"', line);
    expect(out.lines).toHaveLength(2);
    expect(sameTime(out.lines[0]!)).toBe(sameTime(out.lines[1]!));
  });

  it('rounds a kept middle’s duration as a line’s (two decimals)', () => {
    const out = capture();
    const access = accessLogger(createLogger('info', out));
    writeLineWithMiddle(access, 'r', lineMiddle(base), 0.016_67);
    expect((JSON.parse(out.lines[0]!) as { durationMs: number }).durationMs).toBe(0.02);
  });

  it('leaves a kept middle to the caller when pino formats the lines', () => {
    const out = capture();
    const other = pino({ level: 'info' }, out);
    expect(writeLineWithMiddle(other, 'r', lineMiddle(base), 1)).toBe(false);
    expect(out.lines).toEqual([]);
  });

  it('leaves any other logger to pino, with the same line', () => {
    const out = capture();
    const other = pino(
      { level: 'info', base: { service: 'cpgw' }, timestamp: pino.stdTimeFunctions.isoTime },
      out,
    );
    expect(accessSinkOf(other)).toBeUndefined();
    writeRequestLog(other, 'r', LINES[1]![1]);
    const ours = formatRequestLine(',"service":"cpgw"', 'r', LINES[1]![1], Date.now());
    expect(out.lines.map(sameTime)).toEqual([sameTime(ours)]);
  });
});
