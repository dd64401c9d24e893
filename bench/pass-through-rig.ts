// What the pass-through benches (gateway-latency.ts, pass-through-ab.ts) share: an emulator whose
// rate limits are lifted, with one upstream account per client given (coverage windows are per
// account, as upstream), a gateway config whose own limits are lifted to match, with one app, the
// timed no-cache GET both make, and the quantile both report.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pool } from 'undici';
import { newToken, tokenHash } from '../src/auth/tokens.ts';
import { completeInn } from '../src/domain/identifiers.ts';
import { isUnknownInn } from '../src/emulator/data/core.ts';
import { type Child, startCpgw } from './cpgw-process.ts';

/** `keys`: upstream keys, each its own account (1, 2, ...); `extra`: more `cpgw emulator` options. */
export async function startLiftedEmulator(
  keys: readonly string[],
  extra: readonly string[] = [],
): Promise<{ child: Child; url: string }> {
  const emu = await startCpgw(
    [
      'emulator',
      '--port',
      '0',
      ...keys.flatMap((key, i) => ['--api-key', `${key};name=${key};account=${i + 1}`]),
      '--key-limit',
      '100000000',
      '--suggest-limit',
      '100000000',
      ...extra,
    ],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  return { child: emu.child, url: emu.match[0] };
}

/**
 * A gateway config with one app (`bench`, scopes read:companies and read:checks, log level warn)
 * and the token that app uses (`token`, or a new one), in `dir` (or a new temporary directory);
 * `extra`: more top-level YAML (e.g. `store:\n  stateDir: null\n`).
 */
export async function writeBenchGatewayConfig(
  options: { token?: string; extra?: string; dir?: string } = {},
): Promise<{ configFile: string; token: string }> {
  const token = options.token ?? newToken();
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'cpgw-bench-')));
  const configFile = join(dir, 'gateway.yaml');
  await writeFile(
    configFile,
    `log:\n  level: warn\n${options.extra ?? ''}apps:\n  - name: bench\n    tokenHash: "${tokenHash(token)}"\n    scopes: [read:companies, read:checks]\n`,
  );
  return { configFile, token };
}

/**
 * writeBenchGatewayConfig with the gateway's own limits lifted: the emulator's are, so the
 * gateway's must be too (a ceiling over what the upstream reports), or the bench would measure
 * the rate queue instead of the gateway.
 */
export function writeLiftedGatewayConfig(
  options: { token?: string; extra?: string } = {},
): Promise<{ configFile: string; token: string }> {
  return writeBenchGatewayConfig({
    ...options,
    extra: `limits:\n  key: { limit: 1000000, burst: 1000000 }\n  suggest: { limit: 1000000, burst: 1000000 }\n${options.extra ?? ''}`,
  });
}

/**
 * One GET with Cache-Control: no-cache (every call goes upstream: the pass-through path, not the
 * cache; bench/cache-hits.ts measures hits), body read; its time in ms and the gateway's
 * X-Cost-Estimate-Minor. Throws unless 200.
 */
export async function noCacheGet(
  pool: Pool,
  path: string,
  auth: string,
): Promise<{ ms: number; estimate: string | undefined }> {
  const t0 = performance.now();
  const res = await pool.request({
    method: 'GET',
    path,
    headers: { authorization: `Bearer ${auth}`, 'cache-control': 'no-cache' },
  });
  await res.body.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`);
  const estimate = res.headers['x-cost-estimate-minor'];
  return { ms, estimate: typeof estimate === 'string' ? estimate : undefined };
}

/**
 * One read of a company its client has not read (no Cache-Control): its time in ms. Throws
 * unless 200 and charged, and, through a gateway, unless an X-Cache MISS (the paid path).
 */
export async function paidGet(pool: Pool, inn: string, auth: string, viaGateway: boolean): Promise<number> {
  const path = `/v1/companies/${inn}`;
  const t0 = performance.now();
  const res = await pool.request({ method: 'GET', path, headers: { authorization: `Bearer ${auth}` } });
  await res.body.arrayBuffer();
  const ms = performance.now() - t0;
  const charged = Number(res.headers['x-charged-minor'] ?? 0);
  if (res.statusCode !== 200 || !(charged > 0))
    throw new Error(`${path}: ${res.statusCode}, X-Charged-Minor ${res.headers['x-charged-minor']}`);
  if (viaGateway && res.headers['x-cache'] !== 'MISS')
    throw new Error(`${path}: X-Cache ${res.headers['x-cache']} for a company nobody has read`);
  return ms;
}

/** The q-quantile of `xs` (ms), rounded to the microsecond. */
export function quantileMs(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 1000) / 1000;
}

/** Valid INNs the emulator has a dossier for, `count` from `client`'s own range (no two clients share one). */
export function freshInns(client: number, count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const inn = completeInn(String(600_000_000 + client * 1_000_000 + i));
    if (!isUnknownInn(inn)) out.push(inn);
  }
  return out;
}
