// The gateway's configuration: every setting, its default and its limits in one place, plus
// the CPGW_* environment names that override them. Loading and error reporting live in
// load.ts; nothing else in the code base reads process.env for configuration.
import { z } from 'zod';
import { cacheConfigSchema } from '../cache/cache-config.ts';

/** `read:account`: the gateway's own scope: /v1/me shows the wallet and the upstream key's scopes. */
export const SCOPES = ['read:companies', 'read:checks', 'read:persons', 'read:account'] as const;
export type Scope = (typeof SCOPES)[number];

const tokenHash = z
  .string()
  .regex(
    /^sha256:[0-9a-f]{64}$/,
    'must be "sha256:" followed by 64 lowercase hex digits (cpgw token new prints it)',
  );

const budgetLimit = z
  .object({
    limitMinor: z.number().int().min(0),
    softMinor: z.number().int().min(0).optional(),
  })
  .strict()
  .refine((b) => b.softMinor === undefined || b.softMinor <= b.limitMinor, {
    message: 'softMinor must not exceed limitMinor',
    path: ['softMinor'],
  });

/** Spend caps in kopecks per calendar day and month (time zone: cost.timeZone). */
const budgetsSchema = z
  .object({ day: budgetLimit.optional(), month: budgetLimit.optional() })
  .strict()
  .prefault({});

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const LIMIT_CLASS_KEYS = ['key', 'search', 'suggest', 'check'] as const;

/** One rate class's overrides (docs/rate-limits.md); unset fields keep the spec defaults. */
const limitClassSchema = z
  .object({
    /** Upstream calls allowed in any interval of windowMs, across all replicas. */
    limit: z.number().int().min(0).max(1_000_000).optional(),
    windowMs: z.number().int().min(100).max(3_600_000).optional(),
    /** Pacing: at most `burst` starts within burst * windowMs / limit; >= limit turns it off. */
    burst: z.number().int().min(1).max(1_000_000).optional(),
    /** Starts at once (unpaced) while more than this is left and no other app competes. */
    reserve: z.number().int().min(0).max(1_000_000).optional(),
    /** Each start counts for windowMs plus this (dispatch jitter at the window's edge). */
    edgeMarginMs: z.number().int().min(0).max(60_000).optional(),
    /** How long a request may wait in the queue when it sends no X-Max-Wait-Ms. */
    maxWaitMs: z.number().int().min(0).max(600_000).optional(),
    /** While the Store is unreachable: this replica's own limit (default limit / expectedReplicas). */
    localLimit: z.number().int().min(0).max(1_000_000).optional(),
  })
  .strict();

const limitsSchema = z
  .object({
    key: limitClassSchema.optional(),
    search: limitClassSchema.optional(),
    suggest: limitClassSchema.optional(),
    check: limitClassSchema.optional(),
    /** Replicas sharing the Store: while it is unreachable each gets limit / expectedReplicas. */
    expectedReplicas: z.number().int().min(1).max(1000).default(2),
  })
  .strict()
  .prefault({});

/** An app's place in the shared rate budgets: fair-share weight, strict priority, own caps. */
const appLimitsSchema = z
  .object({
    weight: z.number().min(0.001).max(1000).default(1),
    priority: z.number().int().min(-100).max(100).default(0),
    /** At most this many upstream calls of a class per the class's window, across replicas. */
    caps: z.partialRecord(z.enum(LIMIT_CLASS_KEYS), z.number().int().min(0)).default({}),
  })
  .strict()
  .prefault({});

const appSchema = z
  .object({
    name: z
      .string()
      .regex(
        /^[a-z][a-z0-9_-]{0,62}$/,
        'must be lowercase letters, digits, "-" or "_", starting with a letter',
      ),
    tokenHash,
    scopes: z.array(z.enum(SCOPES)).min(1).default(['read:companies', 'read:checks']),
    budgets: budgetsSchema,
    limits: appLimitsSchema,
    /** Where check.completed events of this app's checks are delivered (secret: CPGW_WEBHOOK_SECRET_<APP>). */
    webhook: z.object({ url: z.url() }).strict().nullable().default(null),
  })
  .strict();

export const configSchema = z
  .object({
    server: z
      .object({
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8080),
        bodyLimitBytes: z.number().int().min(1024).max(10_485_760).default(65_536),
        /** After SIGTERM: how long in-flight requests may take before connections are cut. */
        shutdownGraceMs: z.number().int().min(0).max(300_000).default(30_000),
        /**
         * After SIGTERM: how long the gateway keeps serving with /readyz at 503 before it stops
         * listening (time for a load balancer to take it out of rotation; 5 s in Kubernetes).
         */
        drainDelayMs: z.number().int().min(0).max(120_000).default(0),
        trustProxy: z.boolean().default(false),
        /** The whole request (headers and body) must arrive within this; a slow sender is cut off. */
        requestTimeoutMs: z.number().int().min(1_000).max(600_000).default(30_000),
        /** The request headers must arrive within this (below requestTimeoutMs). */
        headersTimeoutMs: z.number().int().min(1_000).max(600_000).default(10_000),
        /** An idle keep-alive connection is closed after this (above a load balancer's own). */
        keepAliveTimeoutMs: z.number().int().min(1_000).max(600_000).default(72_000),
        /**
         * The gateway's address as apps reach it (poll_url, dossier_url, openapi servers). null:
         * taken from each request's Host header.
         */
        publicUrl: z.url().nullable().default(null),
        /**
         * Write a fresh in-process cache HIT before routing (src/pipeline/hit-path.ts); false: every
         * request takes the full pipeline (same answers, ~3x the CPU per HIT).
         */
        hitPath: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    upstream: z
      .object({
        url: z.url().default('https://api.counterparty.example'),
        /** The spec advises at least 15 s for ordinary calls and 30 s for POST /v1/check. */
        timeoutMs: z.number().int().min(100).max(120_000).default(15_000),
        checkTimeoutMs: z.number().int().min(100).max(300_000).default(30_000),
        connections: z.number().int().min(1).max(1024).default(64),
      })
      .strict()
      .prefault({}),
    store: z
      .object({
        redisUrl: z
          .string()
          .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
          .nullable()
          .default(null),
        /** A Redis Cluster's startup nodes (host:port); any reachable one finds the rest. */
        redisClusterNodes: z
          .array(z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/, 'must be host:port'))
          .default([]),
        prefix: z.string().min(1).default('cpgw:'),
        cacheMaxBytes: z.number().int().min(1_048_576).default(268_435_456),
        /**
         * Where a shutdown leaves money operations the store could not take (the local outbox);
         * the next start replays them. Created only when needed. null: nowhere (logged in full).
         * Without Redis it also holds the money database (money.db: ledger, budgets, pending
         * charges; one process owns it); null then keeps money in memory only (lost on restart).
         */
        stateDir: z.string().min(1).nullable().default('.cpgw-state'),
        /**
         * A store fault on a paid call (opening its charge, its company's charge lock) is retried
         * with backoff and jitter for up to this long, within the request's deadline, before
         * answering 503 store_unavailable: a failover is waited out. 0: answer at once.
         */
        failoverWaitMs: z.number().int().min(0).max(60_000).default(10_000),
        /**
         * Redis only: bytes of the in-process tier in front of the shared cache (hot entries, kept
         * no longer than their own TTL, purged on every replica over pub/sub). 0 turns it off.
         */
        localCacheBytes: z.number().int().min(0).default(67_108_864),
        /**
         * PostgreSQL as the system of record for money (budgets, ledger, pending charges, claims,
         * windows); the store above keeps the hot roles only. A password only from the
         * environment (CPGW_POSTGRES_URL or PGPASSWORD), never in a file. null: money stays in
         * the store above.
         */
        postgresUrl: z
          .string()
          .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
          .nullable()
          .default(null),
        /** Connections each gateway process opens to PostgreSQL at most. */
        postgresPoolMax: z.number().int().min(1).max(200).default(10),
        /** A PostgreSQL statement (lock waits included) running longer fails (503 store_unavailable). */
        postgresStatementTimeoutMs: z.number().int().min(100).max(60_000).default(5_000),
      })
      .strict()
      .refine((s) => !(s.redisUrl && s.redisClusterNodes.length > 0), {
        message: 'set redisUrl (one Redis) or redisClusterNodes (a Redis Cluster), not both',
        path: ['redisClusterNodes'],
      })
      .prefault({}),
    log: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        /**
         * One line per answer at info (README "Request log line"). false: none (the metrics still
         * count every answer); each line costs ~2-3 µs of CPU in a loop on a 2-core VM, ~10 µs of a
         * cache HIT's ~80 there (bench/request-log.ts, bench/hit-ab.ts).
         */
        requests: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    cost: z
      .object({
        /** Budgets' days and months are calendar periods in this IANA zone. */
        timeZone: z
          .string()
          .refine(isTimeZone, 'must be an IANA time zone such as Europe/Moscow')
          .default('Europe/Moscow'),
        /** The upstream's free re-read window per company. */
        windowSeconds: z.number().int().min(1).max(86_400).default(900),
        /** Treat a window as closed this long before it really ends. */
        safetyMarginSeconds: z.number().int().min(0).max(600).default(30),
        /** How often the price table (GET /v1/me) is refreshed. */
        pricesRefreshSeconds: z.number().int().min(1).max(86_400).default(60),
        /**
         * Lease on a company's charge lock and on a charged call's pending entry, renewed while
         * the call runs: what a replica that dies holds is freed within this, whatever the wait.
         */
        leaseMs: z.number().int().min(1_000).max(60_000).default(10_000),
        /** How often each replica looks for charges whose outcome is unknown (the reconciler). */
        reconcileIntervalMs: z.number().int().min(100).max(60_000).default(2_000),
        /**
         * Whose clock decides budget days and months and pending-entry leases: `store` (the money
         * store's: Redis TIME, PostgreSQL now(); every replica agrees whatever its own clock says)
         * or `local` (this replica's). The memory store has no clock of its own: local.
         */
        moneyClock: z.enum(['store', 'local']).default('store'),
      })
      .strict()
      .prefault({}),
    /** The shared response cache (docs/cache.md): max ages per kind, stale bound, compression. */
    cache: cacheConfigSchema.prefault({}),
    /** Global spend caps (all apps together). */
    budgets: budgetsSchema,
    /** The shared upstream rate classes (docs/rate-limits.md); defaults from the upstream spec. */
    limits: limitsSchema,
    /** Prometheus exposition (README "Observability"). */
    metrics: z
      .object({
        /**
         * The metrics listener: serves only GET /metrics, to whoever reaches it (keep it on an
         * internal interface). null: none (then only the main port can serve it, see below).
         */
        port: z.number().int().min(0).max(65535).nullable().default(9464),
        host: z.string().default('127.0.0.1'),
        /** Serve GET /metrics on the main port to anyone (false: only with the metrics or admin token). */
        onMainPort: z.boolean().default(false),
        /** A scrape token for GET /metrics on the main port (cpgw token new --metrics prints one). */
        tokenHash: tokenHash.nullable().default(null),
        /** Scrapes within this of a render get that render (a flood costs one render per interval). */
        renderCacheMs: z.number().int().min(0).max(60_000).default(1_000),
        /** Default process metrics (CPU, memory, event loop, GC). */
        processMetrics: z.boolean().default(true),
        /** A scrape waits at most this long for shared state (budgets, limits, windows). */
        sharedReadTimeoutMs: z.number().int().min(10).max(30_000).default(1_000),
        /** Scrapes closer together than this reuse the last shared-state read. */
        sharedReadMinIntervalMs: z.number().int().min(0).max(600_000).default(1_000),
        /** cpgw_windows_open reads at most this many companies' windows. */
        windowsScanLimit: z.number().int().min(1).max(100_000).default(1_000),
      })
      .strict()
      .prefault({}),
    /** Finance settings that are not caps (README "Dashboards and alerts"). */
    finance: z
      .object({
        /**
         * CpgwWalletLowBalance fires when the wallet covers fewer than this many days of the last
         * 7 days' average spend (exported as cpgw_wallet_low_balance_horizon_seconds for the rule).
         */
        lowBalanceDays: z.number().min(0).max(365).default(7),
      })
      .strict()
      .prefault({}),
    /** Soft budget thresholds: where the one-per-period notice is POSTed (Slack-compatible). */
    notices: z
      .object({
        url: z.url().nullable().default(null),
        timeoutMs: z.number().int().min(100).max(60_000).default(5_000),
      })
      .strict()
      .prefault({}),
    /** Checks and webhooks (README "Checks and webhooks"); secrets only from the environment. */
    webhooks: z
      .object({
        /** Where the upstream delivers its events (register this address in the upstream's cabinet). */
        path: z
          .string()
          .regex(/^\/[A-Za-z0-9/_-]*$/, 'must be a path such as /webhooks/upstream')
          .refine(
            (p) => !p.startsWith('/v1/') && !p.startsWith('/admin/'),
            'must not be under /v1/ or /admin/',
          )
          .default('/webhooks/upstream'),
        /** An app's receiver answering later than this counts as unavailable (the upstream's rule). */
        deliveryTimeoutMs: z.number().int().min(100).max(60_000).default(10_000),
        /** Delays before each repeat of a failed delivery to an app (the upstream's schedule). */
        retryDelaysMs: z
          .array(z.number().int().min(0).max(86_400_000))
          .max(20)
          .default([0, 60_000, 300_000, 900_000, 3_600_000]),
        /** How often each replica looks for due deliveries and checks to poll. */
        workerIntervalMs: z.number().int().min(50).max(60_000).default(1_000),
        /**
         * With upstream webhook secrets set: how long past the upstream's Retry-After the gateway
         * waits for the event before it polls the check itself (without secrets it polls at once).
         */
        pollGraceMs: z.number().int().min(0).max(3_600_000).default(15_000),
      })
      .strict()
      .prefault({}),
    admin: z
      .object({
        tokenHash: tokenHash.nullable().default(null),
        /**
         * Rotation: the admin token being replaced, accepted beside tokenHash until it is removed
         * (put the new hash in tokenHash, move the old one here, reload, hand out the new token,
         * then drop this and reload again).
         */
        previousTokenHash: tokenHash.nullable().default(null),
        /**
         * Named admin tokens with a role (src/auth/admin-roles.ts): `admin` everything, `finance`
         * budgets, ledger, reconciliation and audit, `viewer` read-only. The name is the actor in
         * the audit trail. `cpgw token new --admin --name NAME --role ROLE` prints an entry.
         */
        tokens: z
          .array(
            z
              .object({
                name: z
                  .string()
                  .regex(
                    /^[a-z][a-z0-9_-]{0,62}$/,
                    'must be lowercase letters, digits, "-" or "_", starting with a letter',
                  ),
                role: z.enum(['admin', 'finance', 'viewer']),
                tokenHash,
              })
              .strict(),
          )
          .default([]),
      })
      .strict()
      .superRefine((admin, ctx) => {
        // The older tokenHash is the token named "admin"; names and hashes must each be unique.
        const names = new Map<string, number>();
        const hashes = new Set([admin.tokenHash, admin.previousTokenHash].filter((h) => h !== null));
        admin.tokens.forEach((t, i) => {
          if (t.name === 'admin' && admin.tokenHash !== null)
            ctx.addIssue({
              code: 'custom',
              path: ['tokens', i, 'name'],
              message: 'the name "admin" is admin.tokenHash\'s; pick another name',
            });
          if (names.has(t.name))
            ctx.addIssue({
              code: 'custom',
              path: ['tokens', i, 'name'],
              message: `duplicate admin token name (also admin.tokens.${names.get(t.name)})`,
            });
          else names.set(t.name, i);
          if (hashes.has(t.tokenHash))
            ctx.addIssue({
              code: 'custom',
              path: ['tokens', i, 'tokenHash'],
              message: 'the same token is listed twice',
            });
          hashes.add(t.tokenHash);
        });
      })
      .prefault({}),
    apps: z.array(appSchema).default([]),
  })
  .strict();

export type GatewayConfig = z.infer<typeof configSchema>;
export type AppConfig = z.infer<typeof appSchema>;

/** Environment overrides: CPGW_* name → config path and how to read the string. */
export const ENV_OVERRIDES: ReadonlyArray<{
  env: string;
  path: string[];
  /** list: comma-separated strings. */
  type: 'string' | 'int' | 'bool' | 'list';
}> = [
  { env: 'CPGW_HOST', path: ['server', 'host'], type: 'string' },
  { env: 'CPGW_PORT', path: ['server', 'port'], type: 'int' },
  { env: 'CPGW_BODY_LIMIT_BYTES', path: ['server', 'bodyLimitBytes'], type: 'int' },
  { env: 'CPGW_SHUTDOWN_GRACE_MS', path: ['server', 'shutdownGraceMs'], type: 'int' },
  { env: 'CPGW_TRUST_PROXY', path: ['server', 'trustProxy'], type: 'bool' },
  { env: 'CPGW_HIT_PATH', path: ['server', 'hitPath'], type: 'bool' },
  { env: 'CPGW_REQUEST_TIMEOUT_MS', path: ['server', 'requestTimeoutMs'], type: 'int' },
  { env: 'CPGW_HEADERS_TIMEOUT_MS', path: ['server', 'headersTimeoutMs'], type: 'int' },
  { env: 'CPGW_KEEP_ALIVE_TIMEOUT_MS', path: ['server', 'keepAliveTimeoutMs'], type: 'int' },
  { env: 'CPGW_PUBLIC_URL', path: ['server', 'publicUrl'], type: 'string' },
  { env: 'CPGW_WEBHOOKS_PATH', path: ['webhooks', 'path'], type: 'string' },
  { env: 'CPGW_UPSTREAM_URL', path: ['upstream', 'url'], type: 'string' },
  { env: 'CPGW_UPSTREAM_TIMEOUT_MS', path: ['upstream', 'timeoutMs'], type: 'int' },
  { env: 'CPGW_UPSTREAM_CHECK_TIMEOUT_MS', path: ['upstream', 'checkTimeoutMs'], type: 'int' },
  { env: 'CPGW_UPSTREAM_CONNECTIONS', path: ['upstream', 'connections'], type: 'int' },
  { env: 'CPGW_REDIS_URL', path: ['store', 'redisUrl'], type: 'string' },
  { env: 'CPGW_REDIS_CLUSTER_NODES', path: ['store', 'redisClusterNodes'], type: 'list' },
  { env: 'CPGW_STORE_PREFIX', path: ['store', 'prefix'], type: 'string' },
  { env: 'CPGW_CACHE_MAX_BYTES', path: ['store', 'cacheMaxBytes'], type: 'int' },
  { env: 'CPGW_STATE_DIR', path: ['store', 'stateDir'], type: 'string' },
  { env: 'CPGW_STORE_FAILOVER_WAIT_MS', path: ['store', 'failoverWaitMs'], type: 'int' },
  { env: 'CPGW_POSTGRES_URL', path: ['store', 'postgresUrl'], type: 'string' },
  { env: 'CPGW_POSTGRES_POOL_MAX', path: ['store', 'postgresPoolMax'], type: 'int' },
  { env: 'CPGW_POSTGRES_STATEMENT_TIMEOUT_MS', path: ['store', 'postgresStatementTimeoutMs'], type: 'int' },
  { env: 'CPGW_LEASE_MS', path: ['cost', 'leaseMs'], type: 'int' },
  { env: 'CPGW_RECONCILE_INTERVAL_MS', path: ['cost', 'reconcileIntervalMs'], type: 'int' },
  { env: 'CPGW_LOCAL_CACHE_BYTES', path: ['store', 'localCacheBytes'], type: 'int' },
  { env: 'CPGW_LOG_LEVEL', path: ['log', 'level'], type: 'string' },
  { env: 'CPGW_LOG_REQUESTS', path: ['log', 'requests'], type: 'bool' },
  { env: 'CPGW_TIME_ZONE', path: ['cost', 'timeZone'], type: 'string' },
  { env: 'CPGW_WINDOW_SECONDS', path: ['cost', 'windowSeconds'], type: 'int' },
  { env: 'CPGW_WINDOW_SAFETY_MARGIN_SECONDS', path: ['cost', 'safetyMarginSeconds'], type: 'int' },
  { env: 'CPGW_PRICES_REFRESH_SECONDS', path: ['cost', 'pricesRefreshSeconds'], type: 'int' },
  { env: 'CPGW_LOW_BALANCE_DAYS', path: ['finance', 'lowBalanceDays'], type: 'int' },
  { env: 'CPGW_METRICS_PORT', path: ['metrics', 'port'], type: 'int' },
  { env: 'CPGW_METRICS_HOST', path: ['metrics', 'host'], type: 'string' },
  { env: 'CPGW_METRICS_ON_MAIN_PORT', path: ['metrics', 'onMainPort'], type: 'bool' },
  { env: 'CPGW_METRICS_TOKEN_HASH', path: ['metrics', 'tokenHash'], type: 'string' },
  { env: 'CPGW_DRAIN_DELAY_MS', path: ['server', 'drainDelayMs'], type: 'int' },
  { env: 'CPGW_NOTICE_URL', path: ['notices', 'url'], type: 'string' },
  { env: 'CPGW_ADMIN_TOKEN_HASH', path: ['admin', 'tokenHash'], type: 'string' },
  { env: 'CPGW_ADMIN_PREVIOUS_TOKEN_HASH', path: ['admin', 'previousTokenHash'], type: 'string' },
];

/** Secrets: read only from the environment, never from a file. */
export const SECRET_ENV = {
  upstreamApiKey: 'CPGW_UPSTREAM_API_KEY',
  /** Comma-separated: the upstream's webhook secrets (two during a rotation). */
  upstreamWebhookSecrets: 'CPGW_UPSTREAM_WEBHOOK_SECRETS',
} as const;

/** The env variable holding an app's webhook secret: CPGW_WEBHOOK_SECRET_<APP>, other characters as _. */
export const appWebhookSecretEnv = (app: string) =>
  `CPGW_WEBHOOK_SECRET_${app.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

/** Webhook secrets as read from the environment (never from a file). */
export interface WebhookSecrets {
  /** Secrets the upstream signs its deliveries with; empty: the ingress refuses every event. */
  upstream: string[];
  /** Each subscribed app's own secret, by app name. */
  apps: Record<string, string>;
}

export function webhookSecretsFromEnv(
  env: Record<string, string | undefined>,
  apps: ReadonlyArray<{ name: string }>,
): WebhookSecrets {
  const upstream = (env[SECRET_ENV.upstreamWebhookSecrets] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bySecret: Record<string, string> = {};
  for (const app of apps) {
    const secret = env[appWebhookSecretEnv(app.name)]?.trim();
    if (secret) bySecret[app.name] = secret;
  }
  return { upstream, apps: bySecret };
}

/** Checks across entries that the schema cannot see per entry; run on the raw input so they are reported with the rest. */
export function crossFieldProblems(raw: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (!Array.isArray(raw.apps)) return problems;
  const names = new Map<unknown, number>();
  const hashes = new Map<unknown, number>();
  raw.apps.forEach((app: unknown, i: number) => {
    if (!app || typeof app !== 'object') return;
    const hook = (app as { webhook?: Record<string, unknown> | null }).webhook;
    if (hook && typeof hook === 'object' && ('secret' in hook || 'Secret' in hook))
      problems.push(
        `apps.${i}.webhook.secret: must not be in a file; set ${appWebhookSecretEnv(String((app as { name?: unknown }).name ?? ''))} in the environment`,
      );
    const { name, tokenHash } = app as { name?: unknown; tokenHash?: unknown };
    if (name !== undefined && names.has(name))
      problems.push(`apps.${i}.name: duplicate app name (also apps.${names.get(name)})`);
    else names.set(name, i);
    if (tokenHash !== undefined && hashes.has(tokenHash))
      problems.push(`apps.${i}.tokenHash: same token as apps.${hashes.get(tokenHash)}`);
    else hashes.set(tokenHash, i);
  });
  return problems;
}
