// What the pass-through benches (gateway-latency.ts, pass-through-ab.ts) share: an emulator whose
// rate limits are lifted, with one upstream account per client given (coverage windows are per
// account, as upstream), and a gateway config whose own limits are lifted to match, with one app.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newToken, tokenHash } from '../src/auth/tokens.ts';
import { type Child, startCpgw } from './cpgw-process.ts';

/** `keys`: upstream keys, each its own account (1, 2, ...). */
export async function startLiftedEmulator(keys: readonly string[]): Promise<{ child: Child; url: string }> {
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
    ],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  return { child: emu.child, url: emu.match[0] };
}

/** A gateway config with one app (`bench`) and the token that app uses. */
export async function writeLiftedGatewayConfig(): Promise<{ configFile: string; token: string }> {
  const token = newToken();
  const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-'));
  const configFile = join(dir, 'gateway.yaml');
  await writeFile(
    configFile,
    // The emulator's limits are lifted, so the gateway's must be too (a ceiling over what the
    // upstream reports), or the bench would measure the rate queue instead of the gateway.
    `log:\n  level: warn\nlimits:\n  key: { limit: 1000000, burst: 1000000 }\n  suggest: { limit: 1000000, burst: 1000000 }\napps:\n  - name: bench\n    tokenHash: "${tokenHash(token)}"\n    scopes: [read:companies, read:checks]\n`,
  );
  return { configFile, token };
}
