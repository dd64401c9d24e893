// Starts the gateway: load and validate config, build dependencies, listen, shut down
// gracefully on SIGTERM/SIGINT. With no CPGW_UPSTREAM_API_KEY it runs the embedded demo:
// the bundled emulator in the same process as the upstream, and a demo app with a fresh token.
import type { AddressInfo } from 'node:net';
import { resolve as resolvePath } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { newToken, tokenHash } from './auth/tokens.ts';
import { systemClock } from './clock.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import type { GatewayConfig } from './config/schema.ts';
import { createEmulator } from './emulator/emulator-server.ts';
import { createFinanceStore } from './finance/create-finance-store.ts';
import { createLogger } from './logger.ts';
import { startTracing, type Tracing, tracingOptionsFromEnv } from './ops/tracing.ts';
import { buildServer, drainGateway, type ReloadResult, reloadGateway } from './server.ts';
import { createStore } from './store/create-store.ts';
import { EmbeddedStore } from './store/sqlite/embedded-store.ts';
import { UpstreamClient } from './upstream/upstream-client.ts';

export interface RunningGateway {
  server: FastifyInstance;
  url: string;
  /** Set in demo mode: the demo app's token (printed once at start). */
  demoToken: string | null;
  /** Re-reads the config files and applies what can change live (SIGHUP); throws ConfigError. */
  reload(): ReloadResult;
  close(): Promise<void>;
}

export interface StartOptions {
  configFiles?: string[];
  env?: Record<string, string | undefined>;
  logger?: Logger;
  /** Print the start-up banner (the CLI does; tests don't). */
  banner?: (text: string) => void;
}

export async function startGateway(options: StartOptions = {}): Promise<RunningGateway> {
  const { config, upstreamApiKey, webhookSecrets } = loadConfig({
    files: options.configFiles,
    env: options.env,
  });
  const logger = options.logger ?? createLogger(config.log.level);
  const cleanups: Array<() => Promise<void>> = [];

  let upstreamUrl = config.upstream.url;
  let apiKey = upstreamApiKey;
  let demoToken: string | null = null;
  let effective: GatewayConfig = config;
  // A reload reads the same files and environment again; demo mode keeps its demo app.
  let demoApp: GatewayConfig['apps'][number] | null = null;
  // Demo mode: the emulator is the upstream, so its address is what the gateway rewrites out of
  // the URLs it hands to apps (check tickets, events), as it does the real upstream's.
  const withDemo = (c: GatewayConfig, app: GatewayConfig['apps'][number]): GatewayConfig => ({
    ...c,
    upstream: { ...c.upstream, url: upstreamUrl },
    apps: [...c.apps, app],
  });
  const reloadConfig = (): GatewayConfig => {
    const next = loadConfig({ files: options.configFiles, env: options.env }).config;
    if (demoApp) return withDemo(next, demoApp);
    if (next.apps.length === 0) throw new ConfigError(['apps: empty; the gateway would refuse every call']);
    return next;
  };

  if (apiKey === null) {
    const emulatorKey = `emu_${newToken().slice(5)}`;
    const emulator = await createEmulator({
      port: 0,
      host: '127.0.0.1',
      apiKeys: [`${emulatorKey};name=gateway-demo`],
      logger: false,
    });
    cleanups.push(() => emulator.close());
    upstreamUrl = emulator.url;
    apiKey = emulatorKey;
    demoToken = newToken();
    demoApp = {
      name: 'demo',
      tokenHash: tokenHash(demoToken),
      scopes: ['read:companies', 'read:checks', 'read:persons', 'read:account'],
      budgets: {},
      limits: { weight: 1, priority: 0, caps: {} },
      webhook: null,
    };
    effective = withDemo(config, demoApp);
    logger.warn(
      { upstream: upstreamUrl },
      'DEMO MODE: no CPGW_UPSTREAM_API_KEY set; using the bundled emulator as upstream',
    );
  } else if (config.apps.length === 0) {
    throw new Error(
      'no apps are configured: the gateway would refuse every call. Create one with `cpgw token new --app NAME` and add it under `apps:` in your config file (see config/gateway.example.yaml).',
    );
  }

  let store: ReturnType<typeof createStore>;
  try {
    store = createStore({
      redisUrl: config.store.redisUrl ?? undefined,
      redisClusterNodes: config.store.redisClusterNodes,
      prefix: config.store.prefix,
      clock: systemClock,
      cacheMaxBytes: config.store.cacheMaxBytes,
      localCacheBytes: config.store.localCacheBytes,
      stateDir: config.store.stateDir === null ? null : resolvePath(config.store.stateDir),
      onError: (err) => logger.warn({ err: (err as Error)?.message ?? String(err) }, 'store fault'),
      ...(config.store.postgresUrl
        ? {
            postgresUrl: config.store.postgresUrl,
            postgresPoolMax: config.store.postgresPoolMax,
            postgresStatementTimeoutMs: config.store.postgresStatementTimeoutMs,
          }
        : {}),
    });
  } catch (err) {
    // The money file is another process's (or unreadable): stop the demo emulator, then refuse.
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw err;
  }
  cleanups.unshift(() => store.close());
  // PostgreSQL money: connect, refuse a newer schema, migrate (under an advisory lock) before serving.
  try {
    await store.open?.();
  } catch (err) {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw err;
  }
  if (store instanceof EmbeddedStore)
    logger.info({ file: store.moneyFile }, 'money store: embedded database');
  // Budget overrides and the audit trail live where money lives (create-finance-store.ts):
  // PostgreSQL on the money pool, the embedded money.db, or the store's Redis (same prefix).
  const finance = createFinanceStore({
    money: store,
    redisUrl: config.store.redisUrl,
    redisClusterNodes: config.store.redisClusterNodes,
    prefix: config.store.prefix,
    onError: (err) => logger.warn({ err: (err as Error)?.message ?? String(err) }, 'finance store fault'),
  });
  cleanups.unshift(() => finance.close());
  logger.info({ backend: finance.kind }, 'finance store: budget settings and the audit trail');
  const upstream = new UpstreamClient({ url: upstreamUrl, apiKey, connections: config.upstream.connections });
  cleanups.unshift(() => upstream.close());
  // OpenTelemetry traces when OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (src/ops/tracing.ts);
  // nothing loaded otherwise. Flushed right after the server closes.
  let tracing: Tracing | null;
  try {
    tracing = await startTracing(options.env ?? process.env, upstreamUrl);
  } catch (err) {
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw err;
  }
  if (tracing) {
    const t = tracing;
    cleanups.unshift(() => t.shutdown());
    logger.info({ otlp: tracingOptionsFromEnv(options.env ?? process.env)?.url }, 'tracing: OTLP export on');
  }

  const server = await buildServer({
    config: effective,
    upstream,
    store,
    clock: systemClock,
    logger,
    webhookSecrets,
    loadConfig: reloadConfig,
    finance,
    ...(tracing ? { tracing } : {}),
  });
  try {
    await server.listen({ host: config.server.host, port: config.server.port });
  } catch (err) {
    await server.close().catch(() => {}); // its onClose hooks stop the timers buildServer started
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw err;
  }
  const address = server.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      // The drain: /readyz says 503 at once while requests are still served for drainDelayMs,
      // so a load balancer stops sending new ones before the listener closes.
      drainGateway(server);
      if (config.server.drainDelayMs > 0)
        await new Promise((resolve) => setTimeout(resolve, config.server.drainDelayMs));
      const grace = setTimeout(() => server.server.closeAllConnections(), config.server.shutdownGraceMs);
      grace.unref();
      await server.close();
      clearTimeout(grace);
      for (const cleanup of cleanups) await cleanup().catch((err) => logger.warn({ err }, 'cleanup failed'));
    })();
    return closing;
  };

  if (options.banner) options.banner(banner(url, demoToken, upstreamUrl));
  return { server, url, demoToken, reload: () => reloadGateway(server), close };
}

function banner(url: string, demoToken: string | null, upstreamUrl: string): string {
  if (!demoToken) return `cpgw gateway listening on ${url} (upstream ${new URL(upstreamUrl).origin})`;
  return [
    '',
    '  cpgw is running in DEMO MODE: no CPGW_UPSTREAM_API_KEY is set, so the upstream is the',
    `  bundled emulator (${upstreamUrl}) with synthetic data. Nothing here is real or billed.`,
    '',
    `  Gateway: ${url}`,
    `  Demo app token (shown once): ${demoToken}`,
    '',
    '  Try it:',
    `    curl -s -H 'Authorization: Bearer ${demoToken}' ${url}/v1/companies/7707083893 | head -c 400; echo`,
    `    curl -s -H 'Authorization: Bearer ${demoToken}' '${url}/v1/suggest?q=%D0%A1%D0%B1%D0%B5%D1%80'`,
    '',
    '  For production: set CPGW_UPSTREAM_API_KEY and CPGW_CONFIG (see README.md). Ctrl-C stops.',
    '',
  ].join('\n');
}
