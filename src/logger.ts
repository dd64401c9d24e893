// The gateway's pino logger. Redaction paths are declared once, here: authorization headers,
// tokens, the upstream key and webhook secrets never reach a log line (a test proves it).
// Lines to stdout are written in 4 KB batches (at the latest every 200 ms, and at exit).
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'headers.authorization',
  'authorization',
  'token',
  '*.token',
  'apiKey',
  '*.apiKey',
  'upstreamApiKey',
  '*.upstreamApiKey',
  'secret',
  '*.secret',
  'secrets',
  '*.secrets',
  'webhookSecret',
  '*.webhookSecret',
];

/** Bytes of log lines kept before one write to stdout (issue #12: a write per line cost ~20 µs per request). */
const STDOUT_BUFFER_BYTES = 4096;
/** A quiet gateway's lines wait at most this long (ms). */
const STDOUT_FLUSH_MS = 200;

/** The process's one buffered stdout (every logger made without a destination writes to it). */
let stdout: DestinationStream | null = null;

/**
 * stdout, written in batches: lines collect up to STDOUT_BUFFER_BYTES and are written together
 * (synchronously, so nothing is in flight), every STDOUT_FLUSH_MS at the latest, and at exit.
 * One per process, however many gateways it starts (tests start dozens): each would otherwise
 * keep its own timer and exit listener for the life of the process, and two buffers of the same
 * file descriptor would write their lines out of order.
 */
function bufferedStdout(): DestinationStream {
  if (stdout) return stdout;
  const dest = pino.destination({ dest: 1, minLength: STDOUT_BUFFER_BYTES, sync: true });
  setInterval(() => dest.flush(), STDOUT_FLUSH_MS).unref();
  process.once('exit', () => {
    try {
      dest.flushSync();
    } catch {
      // stdout already gone: nothing left to tell
    }
  });
  stdout = dest;
  return dest;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'cpgw' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? bufferedStdout(),
  );
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * The logger of the one line per answer (ops/request-log.ts), on the same destination and level
 * as `logger` but without redaction: that line is built only from fields that are never secret
 * (app and route names, codes, numbers, request ids), and redacting each of them cost ~7 % of a
 * cache HIT's CPU (issue #12 profile).
 */
export function accessLogger(logger: Logger, enabled = true): Logger {
  if (!enabled) return pino({ level: 'silent' });
  let access = accessLoggers.get(logger);
  if (!access) {
    const stream = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
    access = pino(
      { level: logger.level, base: { service: 'cpgw' }, timestamp: pino.stdTimeFunctions.isoTime },
      stream,
    );
    accessLoggers.set(logger, access);
  }
  return access;
}

/**
 * A request's logger (fastify's childLoggerFactory), made into pino's child only when the request
 * logs something. A proxied call logs nothing on its way (its one line is the access logger's,
 * ops/request-log.ts), and pino's child() serializes its bindings through the redaction on every
 * request. Same lines as the child it stands for: every method goes to that child, made once.
 */
export class LazyChildLogger {
  private made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly options: Record<string, unknown>,
  ) {}

  private get log(): Logger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return this.made?.level ?? (this.options.level as string | undefined) ?? this.parent.level;
  }

  set level(level: string) {
    this.log.level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  private write(level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace', args: unknown[]): void {
    (this.log[level] as (...a: unknown[]) => void)(...args);
  }

  child(bindings: Record<string, unknown>, options?: Record<string, unknown>): Logger {
    return this.log.child(bindings, options);
  }
}
