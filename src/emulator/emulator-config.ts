// Options of the emulator, their defaults in one place, and validation that reports every
// problem at once. Nothing here reads the environment or argv (main.ts does that).
import type { Clock, OffsetClock, Random } from '../clock.ts';
import type { EmulatorDataSource } from './data-source.ts';
import { type ModeOptions, type ResolvedModes, resolveModes } from './emulator-modes.ts';
import { type ApiKey, DEFAULT_KEY_SPEC, parseKeySpec } from './key-registry.ts';

export const PRICE_KEYS = ['requisites', 'dossier', 'check', 'person', 'ai_deep'] as const;
export type PriceKey = (typeof PRICE_KEYS)[number];
/** Kopecks; null = withdrawn from sale (price_inactive, not listed in /v1/me). */
export type PriceTable = Record<PriceKey, number | null>;

export const DEFAULT_PRICES: PriceTable = {
  requisites: 1500,
  dossier: 9900,
  check: 19900,
  person: 4900,
  ai_deep: 49900,
};

export const PRICE_TITLES: Record<PriceKey, string> = {
  requisites: 'Реквизиты компании',
  dossier: 'Досье компании',
  check: 'Свежая проверка по реестрам',
  person: 'Связи физического лица',
  ai_deep: 'Глубокий AI-анализ',
};

export interface LimitOptions {
  keyPerMinute: number;
  searchPerMinute: number;
  suggestPerMinute: number;
  coldChecksPerMinute: number;
  personsPerDay: number;
}

export const DEFAULT_LIMITS: LimitOptions = {
  keyPerMinute: 60,
  searchPerMinute: 20,
  suggestPerMinute: 120,
  coldChecksPerMinute: 2,
  personsPerDay: 100,
};

export interface EmulatorOptions extends ModeOptions {
  /** 0 = any free port. */
  port?: number;
  host?: string;
  /** Key specs (`TOKEN;scopes=a+b;env=sandbox;expires=ISO;revoked;account=N;name=X`) or parsed keys. */
  apiKeys?: Array<string | ApiKey>;
  webhookUrl?: string | null;
  /** Several secrets = several v1 signatures (rotation). */
  webhookSecrets?: string[];
  windowSeconds?: number;
  /** How long a cold check collects data. */
  checkSeconds?: number;
  /** How long POST /v1/check waits before answering 202. */
  checkWaitSeconds?: number;
  /** A check of a company checked within this many seconds is warm: data already fresh. */
  freshSeconds?: number;
  priceLagSeconds?: number;
  /** /v1/me's wallet is the balance as of this many seconds ago (`as_of` says when). */
  walletLagSeconds?: number;
  prices?: Partial<PriceTable>;
  walletMinor?: number;
  limits?: Partial<LimitOptions>;
  webhookTimeoutMs?: number;
  /** Delays before attempts 2..n, in ms of emulator time. */
  webhookRetryDelaysMs?: number[];
  seed?: string;
  clock?: OffsetClock;
  /** The wall clock (webhook `t=` in the default `webhookClock: 'real'` mode); default the system's. */
  realClock?: Clock;
  /** Draws latencies; default seeded from `seed`, so a run is repeatable. */
  random?: Random;
  /** Replaces the generated data (tests). */
  data?: EmulatorDataSource;
  /** Base URL used in poll_url and dossier_url; default the listening address. */
  baseUrl?: string;
  logger?: boolean;
}

export interface ResolvedConfig {
  port: number;
  host: string;
  keys: ApiKey[];
  webhookUrl: string | null;
  webhookSecrets: string[];
  windowMs: number;
  checkMs: number;
  checkWaitMs: number;
  freshMs: number;
  priceLagMs: number;
  walletLagMs: number;
  prices: PriceTable;
  walletMinor: number;
  limits: LimitOptions;
  webhookTimeoutMs: number;
  webhookRetryDelaysMs: number[];
  seed: string;
  baseUrl: string | null;
  logger: boolean;
  /** The start values of the modes (the live ones: EmulatorModes, changeable at run time). */
  modes: ResolvedModes;
}

/** Attempt 1 at once, attempt 2 at once, then 1 min, 5 min, 15 min, 1 h: six attempts. */
export const DEFAULT_WEBHOOK_DELAYS_MS = [0, 60_000, 300_000, 900_000, 3_600_000];

function nonNegative(problems: string[], name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) problems.push(`${name} must be a non-negative number`);
  return value;
}

export function resolveConfig(options: EmulatorOptions = {}): ResolvedConfig {
  const problems: string[] = [];
  const keys: ApiKey[] = [];
  for (const spec of options.apiKeys?.length ? options.apiKeys : [DEFAULT_KEY_SPEC]) {
    try {
      keys.push(typeof spec === 'string' ? parseKeySpec(spec) : spec);
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  const prices: PriceTable = { ...DEFAULT_PRICES, ...options.prices };
  for (const key of PRICE_KEYS) {
    const price = prices[key];
    if (price !== null && (!Number.isSafeInteger(price) || price < 0)) {
      problems.push(`price ${key} must be a non-negative integer (kopecks) or null`);
    }
  }
  const limits: LimitOptions = { ...DEFAULT_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 0)
      problems.push(`limit ${name} must be a non-negative integer`);
  }
  const walletMinor = options.walletMinor ?? 10_000_000;
  if (!Number.isSafeInteger(walletMinor) || walletMinor < 0)
    problems.push('wallet must be a non-negative integer');
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push('port must be 0..65535');
  const windowSeconds = nonNegative(problems, 'window-seconds', options.windowSeconds ?? 900);
  const config: ResolvedConfig = {
    port,
    host: options.host ?? '127.0.0.1',
    keys,
    webhookUrl: options.webhookUrl ?? null,
    webhookSecrets: options.webhookSecrets?.length ? options.webhookSecrets : ['emulator-webhook-secret'],
    windowMs: windowSeconds * 1000,
    checkMs: nonNegative(problems, 'check-seconds', options.checkSeconds ?? 25) * 1000,
    checkWaitMs: nonNegative(problems, 'check-wait-seconds', options.checkWaitSeconds ?? 10) * 1000,
    freshMs: nonNegative(problems, 'fresh-seconds', options.freshSeconds ?? windowSeconds) * 1000,
    priceLagMs: nonNegative(problems, 'price-lag-seconds', options.priceLagSeconds ?? 3) * 1000,
    walletLagMs: nonNegative(problems, 'wallet-lag-seconds', options.walletLagSeconds ?? 0) * 1000,
    prices,
    walletMinor,
    limits,
    webhookTimeoutMs: nonNegative(problems, 'webhook-timeout-ms', options.webhookTimeoutMs ?? 10_000),
    webhookRetryDelaysMs: options.webhookRetryDelaysMs ?? DEFAULT_WEBHOOK_DELAYS_MS,
    seed: options.seed ?? 'cpgw',
    baseUrl: options.baseUrl ?? null,
    logger: options.logger ?? false,
    modes: resolveModes(options, problems),
  };
  if (config.webhookUrl !== null) {
    try {
      new URL(config.webhookUrl);
    } catch {
      problems.push(`webhook-url "${config.webhookUrl}" is not a URL`);
    }
  }
  if (problems.length) throw new Error(`invalid emulator options:\n  - ${problems.join('\n  - ')}`);
  return config;
}
