// LazyChildLogger (logger.ts), fastify's per-request logger: the same lines as pino's child with
// the same bindings (redaction included), and no child made for a request that logs nothing.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, LazyChildLogger } from '../../src/logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, logger: createLogger('info', sink) };
}

describe('LazyChildLogger', () => {
  it('writes what pino child() writes, secrets redacted, bindings first', async () => {
    const { lines, logger } = capture();
    new LazyChildLogger(logger, { reqId: 'r-1' }, {}).warn({ token: 'cpgw_secret', code: 'x' }, 'refused');
    logger.child({ reqId: 'r-1' }, {}).warn({ token: 'cpgw_secret', code: 'x' }, 'refused');
    await new Promise((r) => setImmediate(r));
    expect(lines).toHaveLength(2);
    const [lazy, direct] = lines.map(({ time: _t, ...rest }) => rest);
    expect(lazy).toEqual(direct);
    expect(lazy).toMatchObject({ reqId: 'r-1', token: '[redacted]', msg: 'refused', level: 40 });
  });

  it('makes no child for a request that does not log, and one for all of its lines', () => {
    const { logger } = capture();
    let made = 0;
    const parent = Object.create(logger, {
      child: {
        value: (...a: Parameters<typeof logger.child>) => {
          made++;
          return logger.child(...a);
        },
      },
    });
    const lazy = new LazyChildLogger(parent, { reqId: 'r-2' }, {});
    expect(lazy.level).toBe('info');
    expect(made).toBe(0);
    lazy.info('one');
    lazy.error('two');
    expect(made).toBe(1);
  });

  it('follows a level set on it (a route logLevel) and the one given at creation', async () => {
    const { lines, logger } = capture();
    const lazy = new LazyChildLogger(logger, { reqId: 'r-3' }, { level: 'warn' });
    expect(lazy.level).toBe('warn');
    lazy.info('dropped');
    lazy.level = 'debug';
    lazy.debug('kept');
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
  });
});
