// One owner per state directory: the embedded money database (money.db) may be written by one
// process only, so a second gateway pointed at the same store.stateDir refuses to start with a
// one-line reason. The lock is a file naming its holder (pid, host, boot id, process start time);
// a holder that no longer runs (kill -9, a reboot, a reused pid) leaves a stale file that the
// next start takes over. A holder on another host name (another container on a shared volume)
// cannot be checked by pid: the owner renews the file's mtime every 5 s, and such a lock is
// taken over once it has not been renewed for 30 s (a crashed container's replacement starts
// then). Real time on purpose: file mtimes are real time, and this is no cost or limiter logic.
//
// Must never: take a lock whose holder still runs on this host, or remove a lock it does not hold.
// Known limit: two processes that both find the same stale file at the same instant can both take
// it over (there is no flock in Node); a start that follows a crash is normally alone.
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'money.lock';
/** How often the owner renews the lock's mtime, and how old a foreign host's lock must be to be taken over. */
export const HEARTBEAT_MS = 5_000;
export const FOREIGN_STALE_MS = 30_000;

interface Holder {
  pid: number;
  host: string;
  boot: string;
  start: string;
  nonce: string;
}

export class StateLockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateLockedError';
  }
}

export interface StateLock {
  readonly path: string;
  release(): void;
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** The process's start time in clock ticks since boot (field 22 of /proc/PID/stat); '' off Linux. */
function startOf(pid: number): string | null {
  const stat = readOr(`/proc/${pid}/stat`, '');
  if (!stat) return null;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

function me(): Holder {
  return {
    pid: process.pid,
    host: hostname(),
    boot: readOr('/proc/sys/kernel/random/boot_id', '').trim(),
    start: startOf(process.pid) ?? '',
    nonce: randomBytes(8).toString('hex'),
  };
}

function parse(text: string): Holder | null {
  try {
    const h = JSON.parse(text) as Holder;
    return Number.isSafeInteger(h.pid) && typeof h.host === 'string' ? h : null;
  } catch {
    return null;
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** Whether the process the file names may still run (another host: its heartbeat is recent). */
function alive(h: Holder, self: Holder, path: string): boolean {
  if (h.host !== self.host) return ageMs(path) < FOREIGN_STALE_MS;
  if (h.boot && self.boot && h.boot !== self.boot) return false;
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const start = startOf(h.pid);
  // A pid reused by another process (a container restarted as pid 1 again) started at another time.
  return !(h.start && start !== null && start !== h.start);
}

function create(path: string, self: Holder): boolean {
  try {
    writeFileSync(path, `${JSON.stringify(self)}\n`, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Takes the state directory's lock, or throws StateLockedError naming the holder. */
export function acquireStateLock(dir: string, what: string): StateLock {
  const path = join(dir, LOCK_FILE);
  const self = me();
  for (let attempt = 0; attempt < 3; attempt++) {
    if (create(path, self)) {
      const heartbeat = setInterval(() => {
        const now = new Date();
        try {
          utimesSync(path, now, now);
        } catch {}
      }, HEARTBEAT_MS);
      heartbeat.unref();
      return {
        path,
        release() {
          clearInterval(heartbeat);
          if (parse(readOr(path, ''))?.nonce !== self.nonce) return;
          try {
            unlinkSync(path);
          } catch {}
        },
      };
    }
    const text = readOr(path, '');
    const holder = parse(text);
    if (holder && alive(holder, self, path)) {
      throw new StateLockedError(
        `${what} is in use by another cpgw process (pid ${holder.pid} on ${holder.host}); stop it, or give this gateway its own store.stateDir (CPGW_STATE_DIR)`,
      );
    }
    if (text === '' && attempt === 0) continue; // being written this instant: look again
    // Stale (its holder is gone) or unreadable: move it aside and try to create ours.
    const aside = `${path}.stale-${self.nonce}`;
    try {
      renameSync(path, aside);
      rmSync(aside, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  throw new StateLockedError(`${what}: could not take ${path} (another process keeps replacing it)`);
}
