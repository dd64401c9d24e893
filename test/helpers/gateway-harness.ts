// A real gateway in front of a real emulator, both on port 0, for integration tests: apps
// with fresh tokens, captured log lines, and helpers to read the emulator's ledger and
// request log (the ground truth of what went upstream and what was charged). The emulator
// runs in the mode named by CPGW_TEST_EMULATOR_MODE (EMULATOR_TEST_MODES; .ci/matrix runs the
// money and limits tests once per mode), so one test file holds under every reading of the spec.
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { type Clock, OffsetClock } from '../../src/clock.ts';
import {
  configSchema,
  type GatewayConfig,
  type Scope,
  type WebhookSecrets,
} from '../../src/config/schema.ts';
import { createEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator-server.ts';
import type { FinanceStore } from '../../src/finance/finance-store.ts';
import { RedisFinanceStore } from '../../src/finance/redis-finance-store.ts';
import { createLogger } from '../../src/logger.ts';
import type { Tracing } from '../../src/ops/tracing.ts';
import { buildServer } from '../../src/server.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { UpstreamClient } from '../../src/upstream/upstream-client.ts';
import { deleteKeysUnder, startTestRedis, uniquePrefix } from './redis.ts';

export const UPSTREAM_KEY = 'emulator-upstream-key-0f3c9a';

export interface AppSpec {
  name: string;
  scopes?: Scope[];
  budgets?: {
    day?: { limitMinor: number; softMinor?: number };
    month?: { limitMinor: number; softMinor?: number };
  };
  limits?: {
    weight?: number;
    priority?: number;
    caps?: Partial<Record<'key' | 'search' | 'suggest' | 'check', number>>;
  };
  webhook?: { url: string } | null;
}

export interface GatewayInstance {
  url: string;
  server: FastifyInstance;
  store: Store;
  clock: OffsetClock;
  close(): Promise<void>;
}

export interface Harness {
  emulator: Emulator;
  /** The emulator test mode this harness runs under (CPGW_TEST_EMULATOR_MODE). */
  mode: EmulatorTestMode;
  gateway: GatewayInstance;
  tokens: Record<string, string>;
  adminToken: string;
  /** The named admin tokens of HarnessOptions.adminTokens, by name. */
  adminTokens: Record<string, string>;
  logs: string[];
  config: GatewayConfig;
  /** Starts another gateway replica with the same config (share a Redis store to share state). */
  addGateway(store?: Store, extra?: { clockOffsetMs?: number }): Promise<GatewayInstance>;
  call(app: string, path: string, init?: RequestInit): Promise<Response>;
  emu(path: string, body?: unknown): Promise<Record<string, unknown>>;
  /** A call straight to the emulator with the upstream key (what a client without the gateway sees). */
  direct(path: string, init?: RequestInit): Promise<Response>;
  ledger(): Promise<{
    entries: Array<{ inn: string; kind: string; amount_minor: number; idempotency_key: string | null }>;
    totals: { count: number; amount_minor: number };
  }>;
  upstreamCount(): Promise<number>;
  /**
   * Moves both clocks (gateway and emulator) forward. Not Redis's: with a Redis store the rate
   * log, budget hold expiry and key TTLs run on Redis server time (bench/spend-replay-lib.ts).
   */
  advance(ms: number): void;
  close(): Promise<void>;
}

/**
 * Emulator modes the test matrix runs the gateway's money and limits tests under (a test's
 * own `emulator` options still win). Each is one open reading of the spec (docs/upstream-gaps.md).
 */
export const EMULATOR_TEST_MODES = {
  default: {},
  /** A reused Idempotency-Key replays a stored 503/502/402/404 for its day. */
  'replay-errors': { replayErrors: 'all' },
  /** /v1/me answers prices: null and wallet: null for the first 5 s of emulator time. */
  'null-prices': { nullPricesSeconds: 5, nullWalletSeconds: 5 },
  /** Search takes what the spec calls typical: up to 3 s (0.5-3 s, seeded). */
  'slow-search': { latency: { search: '500-3000' } },
  /** The older window reading: a requisites check inside a dossier window leaves it as it is. */
  'requisites-keep': { requisitesCheckWindow: 'keep' },
} as const satisfies Record<string, EmulatorOptions>;

export type EmulatorTestMode = keyof typeof EMULATOR_TEST_MODES;

/** The mode CPGW_TEST_EMULATOR_MODE names (default when unset); an unknown name is an error. */
export function emulatorTestMode(env: NodeJS.ProcessEnv = process.env): {
  name: EmulatorTestMode;
  options: EmulatorOptions;
} {
  const name = env.CPGW_TEST_EMULATOR_MODE || 'default';
  if (!Object.hasOwn(EMULATOR_TEST_MODES, name)) {
    throw new Error(
      `CPGW_TEST_EMULATOR_MODE=${name} is not one of ${Object.keys(EMULATOR_TEST_MODES).join(', ')}`,
    );
  }
  const options = EMULATOR_TEST_MODES[name as EmulatorTestMode] as EmulatorOptions;
  return { name: name as EmulatorTestMode, options: structuredClone(options) };
}

export interface HarnessOptions {
  apps?: AppSpec[];
  config?: Record<string, unknown>;
  emulator?: EmulatorOptions;
  /** A store factory for the gateway(s); default: a fresh memory store. */
  store?: (clock: OffsetClock) => Store;
  /** The first gateway's clock runs this far from the emulator's (a replica with a skewed clock). */
  clockOffsetMs?: number;
  /** What CPGW_UPSTREAM_WEBHOOK_SECRETS / CPGW_WEBHOOK_SECRET_<APP> would give. */
  webhookSecrets?: WebhookSecrets;
  /** A finance store factory for the gateway(s) (budget overrides, audit); default: one in memory each. */
  finance?: () => FinanceStore;
  /** Named admin tokens (admin.tokens) made fresh for this harness, beside the admin token. */
  adminTokens?: Array<{ name: string; role: 'admin' | 'finance' | 'viewer' }>;
  /**
   * What a reload (POST /admin/reload) of any of the gateways reads, given the harness's config
   * (as a config file edited between reloads would give). Absent: the gateways cannot reload.
   */
  loadConfig?: (base: GatewayConfig) => GatewayConfig;
  /** OpenTelemetry traces for the gateway(s) (src/ops/tracing.ts); default: off. */
  tracing?: Tracing;
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const mode = emulatorTestMode();
  const emulator = await createEmulator({
    port: 0,
    apiKeys: [`${UPSTREAM_KEY};name=gateway`],
    logger: false,
    ...mode.options,
    ...options.emulator,
  });
  const tokens: Record<string, string> = {};
  const apps = (options.apps ?? [{ name: 'alpha' }, { name: 'beta' }, { name: 'gamma' }]).map((spec) => {
    tokens[spec.name] = newToken();
    return {
      name: spec.name,
      tokenHash: tokenHash(tokens[spec.name]!),
      scopes: spec.scopes ?? ['read:companies', 'read:checks', 'read:persons'],
      budgets: spec.budgets ?? {},
      limits: spec.limits ?? {},
      webhook: spec.webhook ?? null,
    };
  });
  const adminToken = newToken();
  const adminTokens: Record<string, string> = {};
  const namedAdmins = (options.adminTokens ?? []).map(({ name, role }) => {
    adminTokens[name] = newToken();
    return { name, role, tokenHash: tokenHash(adminTokens[name]!) };
  });
  const config = configSchema.parse({
    // Pacing off (burst = limit): tests send bursts and should not wait for the spread-out
    // starts that production defaults use; the window limits themselves stay the spec's.
    limits: {
      key: { burst: 60 },
      search: { burst: 20 },
      suggest: { burst: 120 },
      check: { burst: 2 },
    },
    ...options.config,
    // Tests move the gateways' clocks (advance()), not Redis's: money follows the gateway clock
    // here unless a test asks for the store's (money-clock tests do).
    cost: { moneyClock: 'local', ...(options.config?.cost as object) },
    // Tests read /metrics on the main port, fresh after each call, and run many gateways at
    // once (no shared metrics listener port); test/integration/metrics-door.test.ts covers the
    // production defaults.
    metrics: { port: null, onMainPort: true, renderCacheMs: 0, ...(options.config?.metrics as object) },
    upstream: { url: emulator.url, ...(options.config?.upstream as object) },
    admin: { tokenHash: tokenHash(adminToken), tokens: namedAdmins },
    apps,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger('info', sink);
  const gateways: GatewayInstance[] = [];

  const addGateway = async (
    shared?: Store,
    extra: { clockOffsetMs?: number } = {},
  ): Promise<GatewayInstance> => {
    const clock = new OffsetClock();
    clock.advance(emulator.clock.offset + (extra.clockOffsetMs ?? 0));
    const store =
      shared ?? options.store?.(clock) ?? createStore({ clock, cacheMaxBytes: config.store.cacheMaxBytes });
    const upstream = new UpstreamClient({ url: emulator.url, apiKey: UPSTREAM_KEY, connections: 16 });
    const finance = options.finance?.();
    const server = await buildServer({
      config,
      upstream,
      store,
      clock,
      logger,
      webhookSecrets: options.webhookSecrets,
      ...(finance ? { finance } : {}),
      ...(options.loadConfig ? { loadConfig: () => options.loadConfig!(config) } : {}),
      ...(options.tracing ? { tracing: options.tracing } : {}),
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const address = server.server.address() as { port: number };
    const instance: GatewayInstance = {
      url: `http://127.0.0.1:${address.port}`,
      server,
      store,
      clock,
      close: async () => {
        // As `cpgw start` does (src/main.ts): connections still open after a grace are cut, so a
        // client's keep-alive socket never holds a test's teardown.
        const grace = setTimeout(() => server.server.closeAllConnections(), 3_000);
        await server.close();
        clearTimeout(grace);
        await upstream.close();
        await finance?.close();
        if (!shared) await store.close();
      },
    };
    gateways.push(instance);
    return instance;
  };

  const gateway = await addGateway(undefined, { clockOffsetMs: options.clockOffsetMs ?? 0 });
  // null-prices mode, for tests written for known prices: the gateway starts while the upstream
  // says prices: null (its first read sees null), then the prices become known and the gateway
  // reads them again. Tests of unknown prices themselves set their own emulator options.
  const nullFor = mode.name === 'null-prices' && options.emulator?.nullPricesSeconds === undefined;
  if (nullFor) {
    emulator.advanceClock((EMULATOR_TEST_MODES['null-prices'].nullPricesSeconds + 1) * 1000);
    gateway.clock.advance((EMULATOR_TEST_MODES['null-prices'].nullPricesSeconds + 1) * 1000);
    await fetch(`${gateway.url}/admin/prices/refresh`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}` },
    });
  }
  const harness: Harness = {
    emulator,
    mode: mode.name,
    gateway,
    tokens,
    adminToken,
    adminTokens,
    logs,
    config,
    addGateway,
    call: (app, path, init = {}) =>
      fetch(`${gateway.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${tokens[app]}`, ...(init.headers as Record<string, string>) },
      }),
    direct: (path, init = {}) =>
      fetch(`${emulator.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${UPSTREAM_KEY}`, ...(init.headers as Record<string, string>) },
      }),
    emu: async (path, body) => {
      const res = await fetch(`${emulator.url}/_emulator${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await res.json()) as Record<string, unknown>;
    },
    ledger: async () => (await harness.emu('/ledger')) as never,
    upstreamCount: async () => {
      const snap = (await harness.emu('/requests')) as { total: number };
      return snap.total;
    },
    advance: (ms) => {
      emulator.advanceClock(ms);
      for (const g of gateways) g.clock.advance(ms);
    },
    close: async () => {
      for (const g of gateways.reverse()) await g.close();
      await emulator.close();
    },
  };
  return harness;
}

export async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}

export interface ReplicaHarness {
  h: Harness;
  /** The second gateway, sharing the first one's Redis state. */
  second: GatewayInstance;
  /** Starts one more replica on the same Redis state (its own connections). */
  another(): Promise<GatewayInstance>;
  /** Closes both gateways, their stores and the test Redis, and deletes the keys written. */
  close(): Promise<void>;
}

/**
 * A harness whose gateway and a second replica share one real Redis (test/helpers/redis.ts
 * rules), or null when no Redis can be had (the caller skips).
 */
export async function startRedisReplicas(
  options: Omit<HarnessOptions, 'store'> = {},
  /** Bytes of each replica's in-process cache tier (production's default is 64 MiB); 0 = none. */
  localCacheBytes = 0,
): Promise<ReplicaHarness | null> {
  const redis = await startTestRedis();
  if (!redis) return null;
  const prefix = uniquePrefix('gateway');
  const stores: Store[] = [];
  const make = (clock: Clock) => {
    const store = createStore({
      redisUrl: redis.url,
      prefix,
      clock,
      cacheMaxBytes: 64 * 1024 * 1024,
      localCacheBytes,
    });
    stores.push(store);
    return store;
  };
  // Replicas on one Redis share budget overrides and the audit trail too (as main.ts sets up).
  const finance = () => new RedisFinanceStore({ target: { url: redis.url }, prefix });
  const h = await startHarness({ ...options, store: make, finance });
  const second = await h.addGateway(make(h.gateway.clock));
  return {
    h,
    second,
    another: () => h.addGateway(make(h.gateway.clock)),
    close: async () => {
      await h.close();
      for (const store of stores) await store.close().catch(() => {});
      await deleteKeysUnder(redis.url, [prefix]);
      await redis.stop();
    },
  };
}
