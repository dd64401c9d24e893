// `cpgw start` and `cpgw migrate` against PostgreSQL as an operator runs them: the gateway
// creates its schema at start and serves; `cpgw migrate` alone finds nothing left to apply; a
// schema newer than the code, a wrong role/password or an unreachable server is refused in one
// line (exit 2) with the password never printed; a password in the YAML file's URL is a config
// error saying to use the environment. The database is created for this file and dropped.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/store/postgres/migrations.ts';
import { envWithoutCpgw, expectDemoServesAndStops, waitForOutput } from '../helpers/child-process.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';

const db: TestDatabase | null = await createTestDatabase('cli');
const maybe = db ? describe : describe.skip;
const SECRET = 'Pg-s3cret-never-printed';
const dir = mkdtempSync(join(tmpdir(), 'cpgw-pg-cli-'));

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await db?.drop();
});

const run = (args: string[], env: Record<string, string>) =>
  spawnSync('node', ['bin/cpgw.js', ...args], {
    env: envWithoutCpgw(env),
    encoding: 'utf8',
    timeout: 30_000,
  });

async function versions(url: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT version FROM cpgw.schema_migrations ORDER BY version');
    return rows.map((r) => r.version as number);
  } finally {
    await client.end();
  }
}

function withCredentials(url: string, user: string, password: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = password;
  return u.toString();
}

maybe('cpgw with PostgreSQL money', () => {
  const url = db?.url ?? '';

  it('start migrates a fresh database and serves; migrate alone then has nothing to apply', async () => {
    const child = spawn('node', ['bin/cpgw.js', 'start'], {
      env: envWithoutCpgw({ CPGW_PORT: '0', CPGW_LOG_LEVEL: 'warn', CPGW_POSTGRES_URL: url }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const out = await waitForOutput(child, /Ctrl-C stops/, 30_000);
      expect(await versions(url)).toEqual(MIGRATIONS.map((m) => m.version));
      await expectDemoServesAndStops(child, out);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const help = run(['migrate', '--help'], {});
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: cpgw migrate/);
    const again = run(['migrate'], { CPGW_POSTGRES_URL: url });
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(`schema at version ${SCHEMA_VERSION} (nothing to apply)`);
  });

  it('a schema newer than the code: start refuses in one line', async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('INSERT INTO cpgw.schema_migrations (version, name) VALUES ($1, $2)', [
      SCHEMA_VERSION + 1,
      'from the future',
    ]);
    try {
      for (const args of [['start']]) {
        const r = run(args, { CPGW_PORT: '0', CPGW_POSTGRES_URL: url });
        expect(r.status).toBe(2);
        const lines = r.stderr.trimEnd().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(`version ${SCHEMA_VERSION + 1}, newer than this gateway knows`);
      }
    } finally {
      await client.query('DELETE FROM cpgw.schema_migrations WHERE version > $1', [SCHEMA_VERSION]);
      await client.end();
    }
  });

  it('a wrong role or password, or nothing listening: refused in one line, the password never printed', () => {
    const wrongRole = withCredentials(url, 'cpgw_no_such_role', SECRET);
    const nowhere = withCredentials('postgres://127.0.0.1:1/cpgw', 'postgres', SECRET);
    const cases: Array<[string[], string]> = [
      [['start'], wrongRole],
      [['start'], nowhere],
      [['migrate'], wrongRole],
    ];
    for (const [args, target] of cases) {
      const r = run(args, { CPGW_PORT: '0', CPGW_POSTGRES_URL: target, CPGW_LOG_LEVEL: 'warn' });
      expect(r.status).toBe(2);
      expect(r.stdout + r.stderr).not.toContain(SECRET);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/postgres/);
    }
  });
});

describe('store.postgresUrl in a config file', () => {
  it('with a password: a config error naming the environment variable, the password not printed', () => {
    const file = join(dir, 'with-password.yaml');
    writeFileSync(file, `store:\n  postgresUrl: postgres://cpgw:${SECRET}@db:5432/cpgw\n`);
    const r = run(['check-config', '--config', file], {});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('store.postgresUrl must not carry a password in a file');
    expect(r.stderr).toContain('CPGW_POSTGRES_URL');
    expect(r.stdout + r.stderr).not.toContain(SECRET);
    const fine = join(dir, 'without-password.yaml');
    writeFileSync(fine, 'store:\n  postgresUrl: postgres://cpgw@db:5432/cpgw\n');
    const ok = run(['check-config', '--config', fine], {});
    expect(ok.stdout).toContain('money in postgres');
    expect(ok.status).toBe(0);
  });
});
