// The gateway's pino logger. Redaction paths are declared once, here: authorization headers,
// tokens, the upstream key and webhook secrets never reach a log line (a test proves it).
// Lines to stdout are written in 16 KB batches (at the latest every 200 ms, and at exit), by a
// writer that never waits for a slow reader (log-writer.ts).
import { type DestinationStream, type Logger, pino } from 'pino';
import { type FdWriter, fdWriter } from './log-writer.ts';

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

/**
 * Characters of log lines kept before one write to stdout (issue #12: a write per line cost ~20 µs
 * per request; 4 KB batches ~0.8 µs a 250-byte line on a 2-core VM, 16 KB ~0.6: bench/request-log.ts).
 */
const STDOUT_BATCH_CHARS = 16 * 1024;
/** A quiet gateway's lines wait at most this long (ms). */
const STDOUT_FLUSH_MS = 200;

/** The bindings every line carries (pino's `base`). */
const BASE = { service: 'cpgw' };

/** The process's one buffered stdout (every logger made without a destination writes to it). */
let stdout: DestinationStream | null = null;
let stdoutWriter: FdWriter | null = null;

/**
 * Log lines the process dropped because stdout's reader was too far behind, or gone (the
 * metric cpgw_log_lines_dropped_total); 0 before the first logger wrote to stdout.
 */
export function stdoutLinesDropped(): number {
  return stdoutWriter?.dropped ?? 0;
}

/**
 * stdout, written in batches: lines collect up to STDOUT_BATCH_CHARS and are written together,
 * every STDOUT_FLUSH_MS at the latest, and at exit. One per process, however many gateways it
 * starts (tests start dozens): each would otherwise keep its own timer and exit listener for the
 * life of the process, and two buffers of the same file descriptor would write their lines out
 * of order.
 */
function bufferedStdout(): DestinationStream {
  if (stdout) return stdout;
  const writer = fdWriter(1, { droppedLine });
  const batch = new LineBatch(writer, STDOUT_BATCH_CHARS);
  setInterval(() => batch.flush(), STDOUT_FLUSH_MS).unref();
  process.once('exit', () => batch.flushSync());
  stdoutWriter = writer;
  stdout = batch;
  return batch;
}

/** The warning line that reports lines lost to a reader too far behind, in pino's format. */
function droppedLine(dropped: number): string {
  const base = JSON.stringify(BASE).slice(1, -1);
  return `{"level":40,"time":"${new Date().toISOString()}",${base},"dropped":${dropped},"msg":"log lines dropped: stdout's reader fell behind"}\n`;
}

/** A file descriptor or path written in batches of lines (LineBatch), as the gateway's stdout is. */
export function batchedDestination(dest: number | string): LineBatch {
  return new LineBatch(fdWriter(dest, { droppedLine }), STDOUT_BATCH_CHARS);
}

/** Where a LineBatch hands its lines (log-writer.ts FdWriter). */
export interface BatchOut {
  write(lines: string): unknown;
  /** Tries again what the destination still holds for a reader that was behind. */
  flush?(): void;
  flushSync(): void;
}

/**
 * Lines collected in one string and handed to `out` (which writes them at once, or keeps them
 * for a reader that is behind) once they reach `minLength` characters, or when flushed. A line
 * costs its append (sonic-boom, which wrote them before, measured its whole pending batch with
 * Buffer.byteLength on every write: ~1.4 µs a 250-byte line at 4 KB batches on a 2-core VM,
 * bench/request-log.ts, where a cache HIT cost ~60 and logs one line by default). Characters,
 * not bytes: a batch of non-ASCII text is somewhat larger, which changes nothing but its size.
 */
export class LineBatch implements DestinationStream {
  private pending = '';

  constructor(
    private readonly out: BatchOut,
    private readonly minLength: number,
  ) {}

  write(line: string): boolean {
    this.pending += line;
    if (this.pending.length >= this.minLength) this.drain();
    return true;
  }

  /** Hands the lines collected so far to the destination, which writes them at once. */
  flush(cb?: (err?: Error) => void): void {
    this.drain();
    this.out.flush?.();
    cb?.();
  }

  /** At exit: everything collected is written (the destination waits a bounded time for its reader). */
  flushSync(): void {
    try {
      this.drain();
      this.out.flushSync();
    } catch {
      // stdout already gone: nothing left to tell
    }
  }

  private drain(): void {
    if (this.pending === '') return;
    const lines = this.pending;
    this.pending = '';
    this.out.write(lines);
  }
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: BASE,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? bufferedStdout(),
  );
}

const accessLoggers = new WeakMap<Logger, Logger>();

/**
 * Where an access logger made here writes, and the bindings every one of its lines carries
 * (pino's `,"service":"cpgw"`): ops/request-log.ts writes the request line itself from these, in
 * pino's own format (the same fields, order and escaping; a test holds the two equal). pino's
 * general path (a spread of the line, then a property walk with a type switch per field) cost ~8
 * µs a line on a 2-core VM where the rest of a cache HIT cost ~60, and every answer logs one by
 * default.
 */
export interface AccessSink {
  readonly stream: DestinationStream;
  readonly bindings: string;
}
const accessSinks = new WeakMap<Logger, AccessSink>();

/** The sink of an access logger made by accessLogger(); undefined for any other logger (pino writes). */
export function accessSinkOf(access: Logger): AccessSink | undefined {
  return accessSinks.get(access);
}

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
    access = pino({ level: logger.level, base: BASE, timestamp: pino.stdTimeFunctions.isoTime }, stream);
    accessLoggers.set(logger, access);
    const bindings = (access as unknown as Record<symbol, unknown>)[pino.symbols.chindingsSym];
    // A destination that needs pino's metadata per line (pino.multistream) keeps pino's path.
    const wantsMetadata =
      stream && (stream as unknown as Record<symbol, unknown>)[Symbol.for('pino.metadata')];
    if (stream && typeof bindings === 'string' && !wantsMetadata)
      accessSinks.set(access, { stream, bindings });
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
