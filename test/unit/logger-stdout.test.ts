// The gateway's stdout logger (src/logger.ts): however many gateways one process starts, their
// loggers share one buffered stdout, with one flush timer and one exit listener.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';

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
