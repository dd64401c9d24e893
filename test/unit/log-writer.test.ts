// The log's writer (src/log-writer.ts) on a real kernel pipe (a FIFO, both ends non-blocking, as
// stdout is once Node has opened it): a reader that is behind never makes a write wait; what the
// pipe does not take waits in order and goes out as the reader takes it; past the backlog's
// bound, batches are dropped and counted and one warning line says so; a reader gone loses lines
// without a throw; at exit the writer waits for the reader, for a bounded time.
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FdWriter } from '../../src/log-writer.ts';

const dirs: string[] = [];
const fds: number[] = [];
afterEach(() => {
  for (const fd of fds.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // closed by the test
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A FIFO opened at both ends, non-blocking. */
function pipe(): { r: number; w: number } {
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-log-writer-'));
  dirs.push(dir);
  const path = join(dir, 'fifo');
  expect(spawnSync('mkfifo', [path]).status).toBe(0);
  const r = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const w = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  fds.push(r, w);
  return { r, w };
}

/** All the pipe holds now. */
function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buf);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Batches of numbered lines, `perBatch` lines of ~100 bytes each. */
function batches(count: number, perBatch: number): string[] {
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < count; b++) {
    let s = '';
    for (let i = 0; i < perBatch; i++) s += `{"n":${n++},"pad":"${'x'.repeat(80)}"}\n`;
    out.push(s);
  }
  return out;
}

const droppedLine = (dropped: number) => `{"msg":"dropped","dropped":${dropped}}\n`;

describe('FdWriter on a real pipe', () => {
  it('writes each batch at once while the reader keeps up', () => {
    const { r, w } = pipe();
    const writer = new FdWriter(w, { droppedLine });
    const [a, b] = batches(2, 10);
    writer.write(a!);
    expect(readAll(r)).toBe(a);
    writer.write(b!);
    expect(readAll(r)).toBe(b);
    expect(writer.waiting).toBe(0);
    expect(writer.dropped).toBe(0);
  });

  it('a full pipe: writes return at once, the rest waits in order and goes out as the reader takes it', () => {
    const { r, w } = pipe();
    const writer = new FdWriter(w, { droppedLine });
    const all = batches(40, 100); // ~400 KB against a 64 KB pipe
    for (const b of all) expect(writer.write(b)).toBe(true);
    expect(writer.waiting).toBeGreaterThan(200_000);
    let got = '';
    for (let i = 0; i < 100 && (writer.waiting > 0 || got.length === 0); i++) {
      got += readAll(r);
      writer.flush();
    }
    got += readAll(r);
    expect(writer.waiting).toBe(0);
    expect(got).toBe(all.join(''));
    expect(writer.dropped).toBe(0);
  });

  it('past the bound, new batches are dropped and counted, and one warning line follows once the reader caught up', () => {
    const { r, w } = pipe();
    const writer = new FdWriter(w, { droppedLine, maxBacklogBytes: 100_000 });
    const all = batches(50, 100); // ~500 KB: 64 KB in the pipe, ~100 KB kept, the rest dropped
    for (const b of all) writer.write(b);
    expect(writer.dropped).toBeGreaterThan(2_000);
    let got = '';
    for (let i = 0; i < 100 && writer.waiting > 0; i++) {
      got += readAll(r);
      writer.flush();
    }
    got += readAll(r);
    const lines = got.trimEnd().split('\n');
    const notice = JSON.parse(lines.at(-1)!) as { msg: string; dropped: number };
    expect(notice).toEqual({ msg: 'dropped', dropped: writer.dropped });
    const kept = lines.slice(0, -1).map((l) => (JSON.parse(l) as { n: number }).n);
    // Whole lines, oldest first, without a gap: a dropped batch is never one before a kept one.
    expect(kept).toEqual(kept.map((_, i) => i));
    expect(kept.length + writer.dropped).toBe(5_000);
    // The reader caught up: the next batch is written at once, with no second warning.
    const [next] = batches(1, 3);
    writer.write(next!);
    expect(readAll(r)).toBe(next);
  });

  it('a reader gone (EPIPE): lines are dropped and counted, nothing is thrown', () => {
    const { r, w } = pipe();
    let sleeps = 0;
    const writer = new FdWriter(w, { droppedLine, sleep: () => sleeps++ });
    closeSync(r);
    fds.splice(fds.indexOf(r), 1);
    const [a, b] = batches(2, 7);
    expect(() => writer.write(a!)).not.toThrow();
    expect(() => writer.write(b!)).not.toThrow();
    expect(() => writer.flushSync()).not.toThrow();
    expect(writer.dropped).toBe(14);
    expect(writer.waiting).toBe(0);
    expect(sleeps).toBe(0); // no wait at exit for a reader that is gone
  });

  it('at exit, waits for a reader that is behind, and gives up after a bounded time', () => {
    const { r, w } = pipe();
    let got = '';
    // A reader that takes what the pipe holds on each pause of the exit wait.
    const reading = new FdWriter(w, { droppedLine, sleep: () => (got += readAll(r)) });
    const all = batches(10, 100); // ~100 KB
    for (const b of all) reading.write(b);
    expect(reading.waiting).toBeGreaterThan(0);
    reading.flushSync();
    got += readAll(r);
    expect(got).toBe(all.join(''));

    // A reader that never reads: the wait ends (the clock moves only by the pauses here).
    let now = 0;
    const stuck = new FdWriter(w, {
      droppedLine,
      now: () => now,
      sleep: (ms) => {
        now += ms;
      },
    });
    for (const b of batches(10, 100)) stuck.write(b);
    stuck.flushSync();
    expect(now).toBeGreaterThanOrEqual(2_000);
    expect(now).toBeLessThan(2_100);
    expect(stuck.waiting).toBeGreaterThan(0);
  });

  it('a write(2) that takes part of a batch: the rest goes first, in order', () => {
    const written: Buffer[] = [];
    let allow = 25;
    const writer = new FdWriter(9, {
      droppedLine,
      write: (_fd, buf) => {
        // The pipe takes `allow` bytes in all, then answers EAGAIN.
        const n = Math.min(allow, buf.length);
        if (n === 0) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
        written.push(Buffer.from(buf.subarray(0, n)));
        allow -= n;
        return n;
      },
    });
    writer.write('first line\nsecond line\nthird\n');
    writer.write('fourth\n');
    expect(Buffer.concat(written).toString()).toBe('first line\nsecond line\nth');
    allow = 1_000;
    writer.flush();
    expect(Buffer.concat(written).toString()).toBe('first line\nsecond line\nthird\nfourth\n');
    expect(writer.waiting).toBe(0);
  });
});
