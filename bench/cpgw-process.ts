// A `cpgw` process (the gateway or the emulator) for the benchmarks: started from bin/cpgw.js,
// ready when its output matches, drained for its whole life (only a tail is kept, so a long
// run's logs cost no memory), stopped with SIGTERM and, after 10 s, SIGKILL.
// The processes run the compiled dist/, as production does: the first start in a run builds it
// when src/ is newer (bin/build.js --if-stale). Sources run through tsx cost more per request
// (esbuild's keepNames wraps every closure in a __name call), which once made the cache-hit
// figures look ~15 % worse than what the image serves.
// CPGW_BENCH_GATEWAY_NODE=<command>: every gateway (`cpgw start`) a bench starts runs under that
// node instead of the bench's own, e.g. a script that execs Node 24 with the image's V8 flags
// (the emulator and the bench stay on theirs); a caller's own `node` argument still wins.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Child {
  process: ChildProcess;
  /** The last few KB the child printed (diagnostics). */
  tail(): string;
}

/** Children still running: those never told to stop are killed when the bench process exits,
 * however it ends (a bench that threw must not leave gateways behind to load the next run's
 * machine); one sent SIGTERM is left to finish its shutdown. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const proc of live) if (!proc.killed) proc.kill('SIGKILL');
});

let built = false;
/** Builds dist/ if src/ changed since the last build (once per bench process); throws if tsc fails. */
export function ensureBuilt(): void {
  if (built) return;
  const script = fileURLToPath(new URL('../bin/build.js', import.meta.url));
  const run = spawnSync(process.execPath, [script, '--if-stale'], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`bin/build.js --if-stale failed (exit ${run.status ?? run.signal})`);
  built = true;
}

/** CPGW_BENCH_GATEWAY_NODE when set (for a results file: what ran the gateways), else null. */
export function chosenGatewayNode(): string | null {
  return process.env.CPGW_BENCH_GATEWAY_NODE || null;
}

/** chosenGatewayNode() and the version that command prints (`-v`), or null when none is chosen. */
export function chosenGatewayNodeVersion(): { path: string; version: string } | null {
  const path = chosenGatewayNode();
  return path ? { path, version: spawnSync(path, ['-v'], { encoding: 'utf8' }).stdout.trim() } : null;
}

/** The node that runs a process started with `args`: CPGW_BENCH_GATEWAY_NODE for a gateway, when set. */
function gatewayNode(args: string[]): string {
  const chosen = chosenGatewayNode();
  return chosen && args[0] === 'start' ? chosen : process.execPath;
}

/**
 * `entry`: the script node runs (bin/cpgw.js; bench/startup.ts also runs bin/run-ts.js src/cli.ts).
 * `launcher`: a command node runs under (`['faketime', '-f', '+45s']`); the child is then the
 * launcher's process, node its child.
 */
export function startCpgw(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
  entry = 'bin/cpgw.js',
  launcher: string[] = [],
  /** How long the process may take to print `ready` (valgrind's launchers need minutes). */
  startTimeoutMs = 20_000,
  /** The node binary that runs it (another Node release than the bench's own). */
  node = gatewayNode(args),
): Promise<{ child: Child; match: RegExpExecArray }> {
  if (entry === 'bin/cpgw.js') ensureBuilt();
  // Each gateway its own money file (store.stateDir; one process owns a state directory), removed
  // when the process ends, unless the caller chose the directory. CPGW_STATE_DIR '' : none is
  // set, so the config file's store.stateDir holds (null there: money in memory, the pure memory
  // store).
  const configState = env.CPGW_STATE_DIR === '';
  const ownState =
    args[0] === 'start' && !configState && !env.CPGW_STATE_DIR
      ? mkdtempSync(join(tmpdir(), 'cpgw-bench-state-'))
      : null;
  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    ...(ownState ? { CPGW_STATE_DIR: ownState } : {}),
    ...env,
  };
  if (configState) delete childEnv.CPGW_STATE_DIR;
  const [command, ...before] = [...launcher, node];
  const proc = spawn(command!, [...before, entry, ...args], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  let out = '';
  const child: Child = { process: proc, tail: () => out };
  return new Promise((resolve, reject) => {
    let started = false;
    const timer = setTimeout(() => {
      proc.kill('SIGKILL'); // a process that never said it was ready must not outlive the bench
      reject(new Error(`no start: ${out}`));
    }, startTimeoutMs);
    const on = (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-8192); // keep draining the pipe; keep only a tail
      const match = started ? null : ready.exec(out);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ child, match });
      }
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.once('exit', (code) => {
      live.delete(proc);
      if (ownState) rmSync(ownState, { recursive: true, force: true });
      if (!started) reject(new Error(`exited ${code}: ${out}`));
    });
  });
}

export async function stopCpgw(child: Child): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  const exited = new Promise((resolve) => child.process.once('exit', resolve));
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A build an A/B bench runs (a checkout with node_modules) and the node that runs its gateway. */
export interface BuildRun {
  dir: string;
  node: string;
}

/**
 * The builds named on an A/B bench's command line, `<dir>` or `<dir>=<node binary>` (that build's
 * gateway on another Node release), each one's dist/ built when its src/ is newer.
 */
export function buildRuns(positionals: readonly string[]): BuildRun[] {
  const runs = positionals.map((p) => {
    const at = p.indexOf('=');
    return at < 0
      ? { dir: resolve(p), node: process.execPath }
      : { dir: resolve(p.slice(0, at)), node: p.slice(at + 1) };
  });
  for (const { dir } of runs) {
    const run = spawnSync(process.execPath, [join(dir, 'bin/build.js'), '--if-stale'], { stdio: 'inherit' });
    if (run.status !== 0) throw new Error(`${dir}: bin/build.js failed`);
  }
  return runs;
}

/** CPU ticks (utime + stime, 1/100 s) of a process, all its threads and its main thread alone (/proc). */
export function cpuTicks(pid: number): { all: number; main: number } {
  const read = (file: string) => {
    const fields = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
  };
  return { all: read(`/proc/${pid}/stat`), main: read(`/proc/${pid}/task/${pid}/stat`) };
}
