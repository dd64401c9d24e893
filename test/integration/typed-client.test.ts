// The typed client of docs/migration.md works against a real gateway (issue 31 item 11):
// examples/typed-client generates its types from the running gateway's GET /v1/openapi.json
// (openapi-typescript), type-checks with its own TypeScript 5 (the repo's TypeScript 7 has no
// compiler API for openapi-typescript), and its program (openapi-fetch) reads /v1/me and two
// companies: the first is charged once, read again for free, and the second is refused with a
// 402 budget_exceeded whose typed details it prints. A program that misspells a path or a field
// does not compile: the types are the gateway's, snake_case included.
//
// examples/typed-client/node_modules comes from `npm ci --prefix examples/typed-client` (.ci/run
// does it after the main npm ci). Missing, this file FAILS saying so; ALLOW_MISSING_TYPED_CLIENT=1
// (outside CI) turns that into a loud skip.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const EXAMPLE = join(ROOT, 'examples/typed-client');
const INSTALL = 'npm ci --prefix examples/typed-client';
const installed = ['openapi-typescript', 'openapi-fetch', 'typescript'].every((p) =>
  existsSync(join(EXAMPLE, 'node_modules', p, 'package.json')),
);
const optional = process.env.ALLOW_MISSING_TYPED_CLIENT === '1';
if (!installed && optional)
  console.warn(
    `\n*** typed-client.test.ts SKIPPED: examples/typed-client/node_modules is missing (${INSTALL}); ` +
      'unset ALLOW_MISSING_TYPED_CLIENT to make this a failure ***\n',
  );

const DOSSIER = 9900;
/** Children run while this process serves the gateway: never spawnSync (it would block it). */
const run = promisify(execFile);

async function sh(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; out: string }> {
  try {
    const r = await run(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: 90_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof e.code === 'number' ? e.code : 1,
      out: `${e.stdout ?? ''}${e.stderr ?? e.message}`,
    };
  }
}
/** The example's own tsc (TypeScript 5); --no: never fetch a package named tsc. */
const tsc = (...args: string[]) => sh('npx', ['--no', '--prefix', 'examples/typed-client', 'tsc', ...args]);

describe.skipIf(!installed && optional)('typed client from the gateway OpenAPI document', () => {
  let h: Harness;
  beforeAll(async () => {
    if (!installed)
      throw new Error(
        `examples/typed-client/node_modules is missing: run \`${INSTALL}\` first (CI runs it in .ci/run); ` +
          'ALLOW_MISSING_TYPED_CLIENT=1 skips this test outside CI',
      );
    h = await startHarness({
      apps: [{ name: 'crm', budgets: { day: { limitMinor: DOSSIER } } }],
    });
  });
  afterAll(() => h?.close());

  it('generates src/gateway.d.ts from GET /v1/openapi.json, type-checks with TypeScript 5, and runs', async () => {
    const generated = await sh('node', ['examples/typed-client/scripts/generate.mjs', h.gateway.url]);
    expect(generated.code, generated.out).toBe(0);
    const types = readFileSync(join(EXAMPLE, 'src/gateway.d.ts'), 'utf8');
    expect(types).toContain('"/v1/companies/{inn}"');
    expect(types).toContain('"budget_exceeded"');
    expect(types).toMatch(/estimate_minor\?: number/);

    expect((await tsc('--version')).out).toMatch(/Version 5\./);
    const checked = await tsc('--noEmit', '-p', 'examples/typed-client');
    expect(checked.code, checked.out).toBe(0);
    const built = await tsc('-p', 'examples/typed-client');
    expect(built.code, built.out).toBe(0);

    const [paid, refused] = knownInns(2, 9100);
    const program = await sh(
      'node',
      ['examples/typed-client/dist/main.js', h.gateway.url, paid!, paid!, refused!],
      { CPGW_TOKEN: h.tokens.crm! },
    );
    expect(program.code, program.out).toBe(0);
    const lines = program.out.trim().split('\n');
    expect(lines[0]).toBe('app crm (budgets in Europe/Moscow)');
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(`^budget app/day \\d{4}-\\d{2}-\\d{2}: spent 0, held 0, cap ${DOSSIER} kopecks$`),
      ),
    );
    expect(lines.slice(-3)).toEqual([
      expect.stringMatching(
        new RegExp(`^company ${paid}: ogrn \\d{13}, charged ${DOSSIER} kopecks \\(X-Cache MISS\\)$`),
      ),
      expect.stringMatching(
        new RegExp(`^company ${paid}: ogrn \\d{13}, charged 0 kopecks \\(X-Cache HIT\\)$`),
      ),
      `company ${refused}: refused, budget_exceeded (app/day): cap ${DOSSIER} kopecks, spent ${DOSSIER}, held 0, this call ${DOSSIER} kopecks`,
    ]);
    // The truth: the vendor charged the one dossier, nothing for the refused company.
    const ledger = await h.ledger();
    expect(ledger.entries.map((e) => [e.inn, e.amount_minor])).toEqual([[paid, DOSSIER]]);
  }, 180_000);

  it('a program that misspells a path or takes a camelCase field for a number does not compile', async () => {
    // Needs the generated file of the test above (the tests of a file run in order).
    const dir = join(EXAMPLE, `.negative-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          extends: '../tsconfig.json',
          compilerOptions: { rootDir: '..', noEmit: true },
          include: ['wrong.ts'],
        }),
      );
      writeFileSync(
        join(dir, 'wrong.ts'),
        [
          "import createClient from 'openapi-fetch';",
          "import type { paths } from '../src/gateway.js';",
          "const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });",
          "await client.GET('/v1/companys/{inn}', { params: { path: { inn: '7707083893' } } });",
          "const { error } = await client.GET('/v1/companies/{inn}', { params: { path: { inn: '7707083893' } } });",
          'export const cap: number | undefined = error?.error.details.limitMinor;',
          '',
        ].join('\n'),
      );
      const r = await tsc('--noEmit', '-p', join(dir, 'tsconfig.json'));
      expect(r.code).not.toBe(0);
      expect(r.out).toMatch(/wrong\.ts\(4,\d+\): error TS2345/);
      // details allows members the document does not name (additionalProperties), so a
      // camelCase `limitMinor` is `unknown` where `limit_minor` is `number | undefined`.
      expect(r.out).toMatch(/wrong\.ts\(6,\d+\): error TS2322: Type 'unknown' is not assignable/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
