// The log's writer to one file descriptor: the gateway's stdout (a pipe to a container runtime's
// log collector, a terminal, a file) or a file it opened. logger.ts hands it batches of whole
// lines (LineBatch); each batch is one write(2). When stdout's reader is behind (a full pipe:
// EAGAIN, or only part of a batch taken), what is left waits here, in order, and goes out before
// the next batch or at the flush timer's next call. Past `maxBacklogBytes` waiting, new batches
// are dropped and their lines counted (`cpgw_log_lines_dropped_total`); once the reader has caught
// up, one warning line says how many were lost.
// Why not sonic-boom's sync mode, which wrote the lines before: on EAGAIN it sleeps 100 ms with
// the event loop stopped (Atomics.wait), and tries again. A reader taking 2 MB/s froze a gateway
// serving 29k HITs/s to 4.8k req/s, p99 102 ms (issue 33, the twelfth pass); a reader that stops
// froze it for as long as it stopped.
// Must never: block the event loop on a slow or stopped reader (at exit only, for a bounded
// time); reorder lines or write part of a line before another; throw into its caller.
import { closeSync, fstatSync, openSync, writeSync } from 'node:fs';

/** Bytes of lines kept for a reader that is behind before new lines are dropped. */
export const MAX_BACKLOG_BYTES = 8 * 1024 * 1024;
/** At exit, how long the lines still waiting may wait for the reader (ms). */
const EXIT_WAIT_MS = 2_000;
/** At exit, the pause between two attempts while the reader is behind (ms). */
const EXIT_RETRY_MS = 5;

export interface FdWriterOptions {
  /** Bytes kept for a reader that is behind (default MAX_BACKLOG_BYTES). */
  maxBacklogBytes?: number;
  /** The line (with its newline) that reports `dropped` lines lost, written once the reader caught up. */
  droppedLine: (dropped: number) => string;
  /** Waits `ms` with the thread stopped: only flushSync (exit) calls it. */
  sleep?: (ms: number) => void;
  /** write(2) (tests give one that refuses on cue); fs.writeSync by default. */
  write?: (fd: number, buf: Buffer) => number;
  /** Clock of the exit wait (ms). */
  now?: () => number;
}

/** Stops the thread for `ms` (the exit wait only). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** A reader that is behind (the write would block) rather than one that is gone. */
function readerBehind(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR';
}

function countLines(buf: Buffer): number {
  let n = 0;
  let at = buf.indexOf(10);
  while (at !== -1) {
    n++;
    at = buf.indexOf(10, at + 1);
  }
  return n;
}

export class FdWriter {
  /** Bytes the reader has not taken yet, oldest first (the first one possibly in part). */
  private readonly backlog: Buffer[] = [];
  private backlogBytes = 0;
  /** Lines dropped since the last warning line. */
  private droppedSince = 0;
  private droppedTotal = 0;
  /** The last write(2) failed for another reason than a reader behind (EPIPE: the reader is gone). */
  private gone = false;
  private readonly maxBacklogBytes: number;
  private readonly writeFd: (fd: number, buf: Buffer) => number;
  private readonly sleep: (ms: number) => void;
  private readonly now: () => number;

  constructor(
    private readonly fd: number,
    private readonly options: FdWriterOptions,
  ) {
    this.maxBacklogBytes = options.maxBacklogBytes ?? MAX_BACKLOG_BYTES;
    this.writeFd = options.write ?? writeSync;
    this.sleep = options.sleep ?? sleepSync;
    this.now = options.now ?? Date.now;
  }

  /** Lines dropped since this writer was made (a reader too far behind, or gone). */
  get dropped(): number {
    return this.droppedTotal;
  }

  /** Bytes waiting for the reader. */
  get waiting(): number {
    return this.backlogBytes;
  }

  /** Writes a batch of whole lines now, or keeps it (after what already waits), or drops it. */
  write(lines: string): boolean {
    if (lines === '') return true;
    const buf = Buffer.from(lines, 'utf8');
    if (this.backlogBytes === 0 && this.droppedSince === 0) {
      const rest = this.attempt(buf);
      if (rest === null) this.drop(buf);
      else if (rest.length > 0) this.keep(rest);
      return true;
    }
    this.keep(buf);
    this.drain();
    return true;
  }

  /** Tries once more to write what waits (the flush timer's call). */
  flush(): void {
    if (this.backlogBytes > 0 || this.droppedSince > 0) this.drain();
  }

  /** At exit: what waits is written, waiting for the reader up to EXIT_WAIT_MS. */
  flushSync(): void {
    const until = this.now() + EXIT_WAIT_MS;
    this.drain();
    while ((this.backlogBytes > 0 || this.droppedSince > 0) && !this.gone && this.now() < until) {
      this.sleep(EXIT_RETRY_MS);
      this.drain();
    }
  }

  /**
   * One write(2) of `buf`: null when the reader is gone or the descriptor failed (the caller
   * decides what is lost), else what is left of it (empty when all was taken).
   */
  private attempt(buf: Buffer): Buffer | null {
    try {
      const n = this.writeFd(this.fd, buf);
      this.gone = false;
      return buf.subarray(Math.min(n, buf.length));
    } catch (error) {
      if (readerBehind(error)) return buf;
      this.gone = true;
      return null;
    }
  }

  /** Keeps `buf` after what waits, or drops it when the backlog is full. */
  private keep(buf: Buffer): void {
    if (this.backlogBytes + buf.length > this.maxBacklogBytes && this.backlogBytes > 0) {
      this.drop(buf);
      return;
    }
    this.backlog.push(buf);
    this.backlogBytes += buf.length;
  }

  private drop(buf: Buffer): void {
    const lines = countLines(buf);
    this.droppedSince += lines;
    this.droppedTotal += lines;
  }

  /** Writes what waits, oldest first, until the reader stops taking; then the warning line. */
  private drain(): void {
    while (this.backlog.length > 0) {
      const head = this.backlog[0]!;
      const rest = this.attempt(head);
      if (rest === null) {
        // The reader is gone: all that waits is lost with it.
        for (const buf of this.backlog.splice(0)) this.drop(buf);
        this.backlogBytes = 0;
        return;
      }
      this.backlogBytes -= head.length - rest.length;
      if (rest.length > 0) {
        this.backlog[0] = rest;
        return;
      }
      this.backlog.shift();
    }
    if (this.droppedSince > 0) {
      const notice = Buffer.from(this.options.droppedLine(this.droppedSince), 'utf8');
      const rest = this.attempt(notice);
      // Not taken at all: the count waits for the next attempt (the notice itself is no lost line).
      if (rest === null || rest.length === notice.length) return;
      this.droppedSince = 0;
      if (rest.length > 0) {
        this.backlog.push(rest);
        this.backlogBytes += rest.length;
      }
    }
  }
}

/**
 * A writer to `dest`: a file descriptor, or a path opened for appending. A pipe or socket on
 * stdout is made non-blocking first (Node's own stdout stream does that when opened: libuv's
 * uv_pipe_open), so a reader that is behind answers EAGAIN instead of stopping the process; a
 * file or terminal is written as it is (a write to them does not wait for a reader).
 */
export function fdWriter(dest: number | string, options: FdWriterOptions): FdWriter {
  if (typeof dest === 'string') {
    const fd = openSync(dest, 'a');
    process.once('exit', () => {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    });
    return new FdWriter(fd, options);
  }
  if (dest === 1 && streamOnStdout()) {
    // Opening process.stdout sets O_NONBLOCK on the pipe or socket (and nothing else): the
    // writer then learns of a full pipe from write(2) instead of waiting on it.
    void process.stdout;
  }
  return new FdWriter(dest, options);
}

function streamOnStdout(): boolean {
  try {
    const st = fstatSync(1);
    return st.isFIFO() || st.isSocket();
  } catch {
    return false;
  }
}
