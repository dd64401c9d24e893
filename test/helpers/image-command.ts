// The command the image starts the gateway with (the Dockerfile's CMD), for the files that must run
// the same one (compose.yaml's gateways, deploy/kubernetes's Deployment).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The Dockerfile's last top-level CMD, as its JSON array (HEALTHCHECK's CMD is a continuation). */
export function imageCommand(): string[] {
  const dockerfile = readFileSync(join(import.meta.dirname, '../../Dockerfile'), 'utf8');
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  const cmd = lines.filter((l) => /^CMD\s+\[/.test(l)).at(-1);
  if (!cmd) throw new Error('Dockerfile: no CMD');
  return JSON.parse(cmd.slice(3)) as string[];
}

/** What follows `bin/cpgw.js` in a command (the cpgw subcommand and its arguments). */
export function cpgwArgs(command: readonly string[]): string[] {
  const at = command.indexOf('bin/cpgw.js');
  return at < 0 ? [] : command.slice(at + 1);
}
