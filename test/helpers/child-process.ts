// Helpers for tests that run the real `cpgw` as a user would: an environment without the
// caller's CPGW_* settings, waiting until a child prints a line, and checking a demo gateway.
import type { ChildProcess } from 'node:child_process';
import { expect } from 'vitest';
import { type Child, startCpgw } from '../../bench/cpgw-process.ts';

/** process.env without any CPGW_* variable, so a developer's settings never leak into a test. */
export function envWithoutCpgw(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('CPGW_') && v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/** A real `cpgw emulator` process on a free port serving `apiKey` (named "gateway"); stop it with stopCpgw. */
export async function startEmulatorProcess(apiKey: string): Promise<{ child: Child; url: string }> {
  const { child, match } = await startCpgw(
    ['emulator', '--port', '0', '--api-key', `${apiKey};name=gateway`],
    envWithoutCpgw(),
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  return { child, url: match[0] };
}

/** Resolves with everything the child printed (stdout and stderr) once it matches `pattern`. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${why} waiting for ${pattern}; got:\n${out}`));
    };
    const timer = setTimeout(() => fail('timed out'), timeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        child.off('exit', onExit);
        resolve(out);
      }
    };
    const onExit = (code: number | null) => fail(`exited (${code})`);
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

/**
 * A `cpgw start` in demo mode, whose banner is `out`: `more(url)` runs first, then the printed
 * token reads a company through the gateway (200, the right INN), and SIGTERM exits 0.
 */
export async function expectDemoServesAndStops(
  child: ChildProcess,
  out: string,
  more: (url: string) => Promise<void> = async () => {},
): Promise<void> {
  const token = /Demo app token \(shown once\): (\S+)/.exec(out)![1]!;
  const url = /Gateway: (http:\/\/\S+)/.exec(out)![1]!;
  await more(url);
  const res = await fetch(`${url}/v1/companies/7707083893`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { company: { inn: string } }).company.inn).toBe('7707083893');
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  child.kill('SIGTERM');
  expect(await exited).toBe(0);
}
