// Helpers for tests that run the real `cpgw` as a user would: an environment without the
// caller's CPGW_* settings, and waiting until a child prints a line.
import type { ChildProcess } from 'node:child_process';

/** process.env without any CPGW_* variable, so a developer's settings never leak into a test. */
export function envWithoutCpgw(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CPGW_')) delete env[k];
  return { ...env, ...extra };
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
