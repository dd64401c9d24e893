// The gateway's stdout logger (src/logger.ts): however many gateways one process starts, their
// loggers share one buffered stdout, with one flush timer and one exit listener; that stdout
// (LineBatch) hands lines on in batches, in the order every logger wrote them.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { accessLogger, createLogger, LineBatch } from '../../src/logger.ts';
import { writeRequestLog } from '../../src/ops/request-log.ts';

describe('createLogger without a destination', () => {
  it('adds at most one exit listener to the process for any number of loggers', () => {
    const before = process.listenerCount('exit');
    const loggers = Array.from({ length: 20 }, () => createLogger('silent'));
    expect(loggers).toHaveLength(20);
    expect(process.listenerCount('exit') - before).toBeLessThanOrEqual(1);
  });

  it('gives every logger the same stdout stream', () => {
    // pino.symbols.streamSym: where pino keeps a logger's destination (pino's public symbols).
    const stream = (logger: ReturnType<typeof createLogger>) =>
      (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
    const a = createLogger('info');
    const b = createLogger('warn');
    expect(stream(a)).toBeDefined();
    expect(stream(a)).toBe(stream(b));
  });
});

describe('LineBatch (the stdout destination)', () => {
  function fakeOut() {
    const writes: string[] = [];
    let syncs = 0;
    return {
      writes,
      syncs: () => syncs,
      out: {
        write: (s: string) => {
          writes.push(s);
          return true;
        },
        flushSync: () => {
          syncs++;
        },
      },
    };
  }

  it('hands lines on in batches of at least minLength characters, and the rest when flushed', () => {
    const f = fakeOut();
    const batch = new LineBatch(f.out, 25);
    batch.write('line one.\n');
    batch.write('line two.\n');
    expect(f.writes).toEqual([]);
    batch.write('line 3...\n');
    expect(f.writes).toEqual(['line one.\nline two.\nline 3...\n']);
    batch.write('line four\n');
    batch.flush();
    expect(f.writes).toEqual(['line one.\nline two.\nline 3...\n', 'line four\n']);
    batch.write('last line\n');
    batch.flushSync();
    expect(f.writes.at(-1)).toBe('last line\n');
    expect(f.syncs()).toBe(1);
    batch.flush();
    expect(f.writes).toHaveLength(3);
  });

  it('keeps the order of every logger writing to it, request lines included', () => {
    const f = fakeOut();
    const batch = new LineBatch(f.out, 1 << 20);
    const main = createLogger('info', batch);
    const access = accessLogger(main);
    main.info('first');
    writeRequestLog(access, 'r1', {
      app: 'a',
      route: 'bank',
      method: 'GET',
      status: 200,
      cache: 'HIT',
      charged: 0,
      durationMs: 0.1,
    });
    main.warn('third');
    batch.flush();
    const lines = f.writes
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toEqual(['first', 'request', 'third']);
  });
});
