// A core for the server under test, another for its load: the HIT benches pin every server's
// main thread (its event loop) to one CPU and themselves, with the wrk they spawn and the readers
// of the servers' output, to another (taskset). On a 2-core machine a server and wrk otherwise
// share both cores as the scheduler places them, and a placement holds for seconds to a process's
// whole life: fresh gateways of one build, each loaded the same way, read 11.9 to 14.2 µs of CPU a
// bank-record HIT by process, 15 % apart, and the same five pinned read 11.7 to 12.4 (issue 33,
// thirteenth pass, docs/performance.md). Pinned, each event loop has a core to itself, as a server
// and its clients on different machines would; the ratios between servers then compare servers,
// not their draws. A server's other threads (V8's collector and compiler, libuv's pool) are left
// where the scheduler puts them: pinned to the event loop's core too, the collector's concurrent
// marking took turns with it and the memory gateway's p99 at 16 connections rose from ~0.8 to
// ~3.5 ms in two cells. The Redis server and PostgreSQL are not pinned (they are not ours).
// Must never: pin a process it did not start (other than itself), or fail a bench where taskset
// or a second core is missing (it says so and runs unpinned).
import { spawnSync } from 'node:child_process';

export interface CpuPinning {
  /** The CPU the servers' event loops run on. */
  serverCpu: number;
  /** The CPU of this process's event loop and of what it spawns once pinned (wrk, other servers). */
  loadCpu: number;
}

/** The CPUs this process may run on (`taskset -c -p`), or null when taskset cannot say. */
function allowedCpus(pid: number): number[] | null {
  const run = spawnSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' });
  if (run.error || run.status !== 0) return null;
  const list = /affinity list:\s*([\d,\-\s]+)/.exec(run.stdout)?.[1];
  if (!list) return null;
  const cpus: number[] = [];
  for (const part of list.trim().split(',')) {
    const [from, to] = part.split('-').map(Number);
    if (!Number.isInteger(from)) return null;
    for (let c = from!; c <= (to ?? from!); c++) cpus.push(c);
  }
  return cpus;
}

/**
 * Pins this process (and so what it spawns from now on) to the second CPU it may use and returns
 * the first for the servers; null, with the reason printed, when pinning is off or not possible.
 */
export function pinBench(enabled: boolean): CpuPinning | null {
  if (!enabled) return null;
  const cpus = allowedCpus(process.pid);
  if (!cpus || cpus.length < 2) {
    console.error(`cpu pinning: off (${cpus ? `${cpus.length} CPU allowed` : 'no taskset'})`);
    return null;
  }
  const pinning = { serverCpu: cpus[0]!, loadCpu: cpus[1]! };
  pinProcess(process.pid, pinning.loadCpu);
  return pinning;
}

/**
 * Pins the main thread of `pid` (a server this bench started: its event loop) to `cpu`; its other
 * threads, made when it started, keep the CPUs they had.
 */
export function pinProcess(pid: number, cpu: number): void {
  const run = spawnSync('taskset', ['-c', '-p', String(cpu), String(pid)], { encoding: 'utf8' });
  if (run.error || run.status !== 0)
    throw new Error(`taskset -c -p ${cpu} ${pid}: ${run.error?.message ?? run.stderr.trim()}`);
}

/** A pinning as the benches' results record it (null: not pinned). */
export function pinningJson(pinning: CpuPinning | null): { server_cpu: number; load_cpu: number } | null {
  return pinning ? { server_cpu: pinning.serverCpu, load_cpu: pinning.loadCpu } : null;
}

/** The header's words for a pinning. */
export function pinningText(pinning: CpuPinning | null): string {
  return pinning
    ? `servers' event loops pinned to CPU ${pinning.serverCpu}, wrk and this client to CPU ${pinning.loadCpu}`
    : 'not pinned (--no-pin, or taskset or a second CPU missing)';
}
