// `cpgw emulator`: parses flags and CPGW_EMULATOR_* environment variables (flags win),
// starts the emulator, prints one start-up line and shuts down on SIGINT/SIGTERM.
// It never holds state of its own: everything lives in createEmulator().

import { parseArgs } from 'node:util';
import type { SectionName } from '../domain/requests.ts';
import { type EmulatorOptions, PRICE_KEYS, type PriceKey } from './emulator-config.ts';
import {
  LATENCY_ROUTES,
  parseLatencyFlags,
  type ReplayErrors,
  type RequisitesCheckWindow,
  resolveModes,
  type WebhookClock,
} from './emulator-modes.ts';
import { createEmulator } from './emulator-server.ts';
import { DEFAULT_KEY_SPEC } from './key-registry.ts';

const USAGE = `usage: cpgw emulator [options]     (each flag also as env CPGW_EMULATOR_<NAME>, e.g. CPGW_EMULATOR_PORT)

  --port N                 listen port; 0 = any free port (default 8790)
  --host HOST              listen address (default 127.0.0.1)
  --api-key SPEC           repeatable (env: comma-free list separated by spaces); default "${DEFAULT_KEY_SPEC}"
                           SPEC = TOKEN[;name=NAME][;account=N][;env=production|sandbox]
                                  [;scopes=read:companies+read:checks+read:persons][;expires=ISO][;revoked]
  --webhook-url URL        where check.completed is delivered (default: none)
  --webhook-secret SECRET  repeatable; two secrets = two v1 signatures (rotation)
  --window-seconds N       coverage window (default 900)
  --check-seconds N        how long a cold check collects (default 25)
  --check-wait-seconds N   wait before 202 (default 10)
  --fresh-seconds N        a check within N s of the last one for the INN is warm (default window)
  --price-lag-seconds N    delay before /v1/me shows a price change (default 3)
  --wallet-lag-seconds N   /v1/me's wallet is the balance N s ago; as_of says when (default 0)
  --price KIND=KOPECKS     repeatable; KIND one of ${PRICE_KEYS.join(', ')}; "null" withdraws from sale
  --wallet KOPECKS         starting balance per account (default 10000000)
  --key-limit N --search-limit N --suggest-limit N --cold-check-limit N --persons-daily-limit N
  --seed SEED              data seed (default cpgw; also seeds the latency draws)
 modes (docs/upstream-gaps.md "Modes"; change at run time with POST /_emulator/modes):
  --replay-errors none|all          a reused Idempotency-Key replays a stored error answer: none (default) | all
  --null-prices-seconds N           /v1/me answers prices: null for the first N s (default 0)
  --null-wallet-seconds N           /v1/me answers wallet: null for the first N s (default 0)
  --latency ROUTE=MS|ROUTE=MIN-MAX  repeatable; ROUTE one of ${LATENCY_ROUTES.join(', ')} (e.g. search=500-3000)
  --requisites-check-window table|both|keep   what a finished requisites check does to a dossier window (default table)
  --webhook-clock real|emulator     clock of the webhook signature's t= (default real)
  --section-differs NAME            that section's endpoint answer differs from the dossier member
  --help`;

const FLAGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  'api-key': { type: 'string', multiple: true },
  'webhook-url': { type: 'string' },
  'webhook-secret': { type: 'string', multiple: true },
  'window-seconds': { type: 'string' },
  'check-seconds': { type: 'string' },
  'check-wait-seconds': { type: 'string' },
  'fresh-seconds': { type: 'string' },
  'price-lag-seconds': { type: 'string' },
  'wallet-lag-seconds': { type: 'string' },
  price: { type: 'string', multiple: true },
  wallet: { type: 'string' },
  'key-limit': { type: 'string' },
  'search-limit': { type: 'string' },
  'suggest-limit': { type: 'string' },
  'cold-check-limit': { type: 'string' },
  'persons-daily-limit': { type: 'string' },
  seed: { type: 'string' },
  'replay-errors': { type: 'string' },
  'null-prices-seconds': { type: 'string' },
  'null-wallet-seconds': { type: 'string' },
  latency: { type: 'string', multiple: true },
  'requisites-check-window': { type: 'string' },
  'webhook-clock': { type: 'string' },
  'section-differs': { type: 'string' },
  help: { type: 'boolean' },
} as const;

type FlagName = keyof typeof FLAGS;

function envName(flag: string): string {
  return `CPGW_EMULATOR_${flag.toUpperCase().replaceAll('-', '_')}`;
}

/** Flags, then env vars for what the flags leave out; multi-valued env vars split on whitespace. */
export function parseEmulatorArgs(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): EmulatorOptions | 'help' {
  const { values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false });
  if (values.help) return 'help';
  const problems: string[] = [];
  const one = (name: FlagName): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : env[envName(name)];
  };
  const many = (name: FlagName): string[] | undefined => {
    const v = values[name];
    if (Array.isArray(v) && v.length) return v;
    const e = env[envName(name)];
    return e ? e.split(/\s+/).filter(Boolean) : undefined;
  };
  const num = (name: FlagName): number | undefined => {
    const raw = one(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) problems.push(`--${name} must be a number, got "${raw}"`);
    return n;
  };
  const prices: Partial<Record<PriceKey, number | null>> = {};
  for (const item of many('price') ?? []) {
    const [kind, value] = item.split('=');
    if (!kind || !(PRICE_KEYS as readonly string[]).includes(kind) || value === undefined) {
      problems.push(`--price "${item}" must be KIND=KOPECKS with KIND one of ${PRICE_KEYS.join(', ')}`);
      continue;
    }
    prices[kind as PriceKey] = value === 'null' ? null : Number(value);
  }
  const limits: Record<string, number> = {};
  const limitFlags = {
    keyPerMinute: 'key-limit',
    searchPerMinute: 'search-limit',
    suggestPerMinute: 'suggest-limit',
    coldChecksPerMinute: 'cold-check-limit',
    personsPerDay: 'persons-daily-limit',
  } as const;
  for (const [option, flag] of Object.entries(limitFlags)) {
    const n = num(flag);
    if (n !== undefined) limits[option] = n;
  }
  const options: EmulatorOptions = {
    port: num('port') ?? 8790,
    host: one('host') ?? '127.0.0.1',
    apiKeys: many('api-key') ?? [DEFAULT_KEY_SPEC],
    webhookUrl: one('webhook-url') ?? null,
    prices,
    limits,
  };
  const secrets = many('webhook-secret');
  if (secrets) options.webhookSecrets = secrets;
  const numeric = {
    windowSeconds: 'window-seconds',
    checkSeconds: 'check-seconds',
    checkWaitSeconds: 'check-wait-seconds',
    freshSeconds: 'fresh-seconds',
    priceLagSeconds: 'price-lag-seconds',
    walletLagSeconds: 'wallet-lag-seconds',
    walletMinor: 'wallet',
    nullPricesSeconds: 'null-prices-seconds',
    nullWalletSeconds: 'null-wallet-seconds',
  } as const;
  for (const [option, flag] of Object.entries(numeric)) {
    const n = num(flag);
    if (n !== undefined) options[option as keyof typeof numeric] = n;
  }
  const seed = one('seed');
  if (seed !== undefined) options.seed = seed;
  const replayErrors = one('replay-errors');
  if (replayErrors !== undefined) options.replayErrors = replayErrors as ReplayErrors;
  const requisitesWindow = one('requisites-check-window');
  if (requisitesWindow !== undefined)
    options.requisitesCheckWindow = requisitesWindow as RequisitesCheckWindow;
  const webhookClock = one('webhook-clock');
  if (webhookClock !== undefined) options.webhookClock = webhookClock as WebhookClock;
  const sectionDiffers = one('section-differs');
  if (sectionDiffers !== undefined) options.sectionDiffers = sectionDiffers as SectionName;
  const latency = many('latency');
  if (latency) options.latency = parseLatencyFlags(latency, problems);
  resolveModes(options, problems);
  if (problems.length) throw new Error(`invalid emulator options:\n  - ${problems.join('\n  - ')}`);
  return options;
}

/** Runs until SIGINT/SIGTERM; answers the exit code (2: bad options, reported on stderr). */
export async function runEmulatorCli(argv: string[]): Promise<number> {
  let options: EmulatorOptions | 'help';
  try {
    options = parseEmulatorArgs(argv);
  } catch (error) {
    console.error(`cpgw emulator: ${(error as Error).message} (see cpgw emulator --help)`);
    return 2;
  }
  if (options === 'help') {
    console.log(USAGE);
    return 0;
  }
  const emulator = await createEmulator(options);
  const { config } = emulator;
  console.log(
    `cpgw emulator listening on ${emulator.url} ` +
      `(keys: ${config.keys.map((k) => k.name).join(', ')}; window ${config.windowMs / 1000}s, ` +
      `check ${config.checkMs / 1000}s, wait ${config.checkWaitMs / 1000}s; ` +
      `webhook: ${config.webhookUrl ?? 'none'}; control API: ${emulator.url}/_emulator/; ` +
      `modes: ${JSON.stringify(emulator.context.modes.snapshot())})`,
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      console.log(`cpgw emulator: ${signal} received, shutting down`);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      emulator.close().then(resolve, (error: unknown) => {
        console.error(`cpgw emulator: close failed: ${(error as Error).message}`);
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  return 0;
}
