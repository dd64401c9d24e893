// `cpgw token new --admin --name NAME --role ROLE` as an operator runs it: the token printed
// once, config lines that check-config accepts (the hash matches the token), and clear one-line
// refusals (exit 2) for a bad role, a missing name, or --name without --admin.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tokenHash } from '../../src/auth/tokens.ts';
import { envWithoutCpgw } from '../helpers/child-process.ts';

const cpgw = (...args: string[]) =>
  spawnSync('node', ['bin/cpgw.js', ...args], { env: envWithoutCpgw(), encoding: 'utf8', timeout: 20_000 });

describe('cpgw token new --admin --name --role', () => {
  it('prints the token once and config lines that check-config accepts', () => {
    const r = cpgw('token', 'new', '--admin', '--name', 'fin', '--role', 'finance');
    expect(r.status).toBe(0);
    const token = /\n {2}(cpgw_\S+)\n/.exec(r.stdout)![1]!;
    expect(r.stdout.split(token)).toHaveLength(2);
    const lines = r.stdout.slice(r.stdout.indexOf('  admin:'));
    expect(lines).toContain(`- name: fin\n        role: finance\n        tokenHash: "${tokenHash(token)}"`);
    const dir = mkdtempSync(join(tmpdir(), 'cpgw-admin-token-'));
    try {
      const file = join(dir, 'gateway.yaml');
      writeFileSync(
        file,
        lines
          .split('\n')
          .map((l) => l.slice(2))
          .join('\n'),
      );
      const check = cpgw('check-config', '--config', file);
      expect(check.stderr).toBe('');
      expect(check.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad role, a bad or missing name, and --name without --admin', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--admin', '--name', 'fin', '--role', 'boss'], /--role must be one of admin, finance, viewer/],
      [['--admin', '--role', 'viewer'], /--name NAME is required/],
      [['--admin', '--name', 'Fin!', '--role', 'viewer'], /--name NAME is required/],
      [['--name', 'fin', '--role', 'viewer'], /--name and --role are for admin tokens: add --admin/],
    ];
    for (const [args, message] of cases) {
      const r = cpgw('token', 'new', ...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
  });
});
