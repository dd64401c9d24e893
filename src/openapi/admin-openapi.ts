// The admin API's own OpenAPI 3.0.3 document (issue #18: a client generator for the admin API,
// apart from the upstream-shaped /v1 document). Served at GET /admin/openapi.json behind the
// admin token. A test checks that every /admin route the server registers is described here.
//
// Must never: describe a route the server does not serve, or carry a token or a hash.

type Json = Record<string, unknown>;

const envelope: Json = { $ref: '#/components/schemas/Error' };
const refusals: Json = {
  '401': {
    description: 'The admin token is not accepted',
    content: { 'application/json': { schema: envelope } },
  },
  '403': {
    description: 'feature_unavailable: the token\'s role lacks this right (README "Admin roles")',
    content: { 'application/json': { schema: envelope } },
  },
  '404': {
    description: 'The admin API is disabled (no admin.tokens and no admin.tokenHash)',
    content: { 'application/json': { schema: envelope } },
  },
};
const ok = (description: string, schema: Json = { type: 'object', additionalProperties: true }): Json => ({
  '200': { description, content: { 'application/json': { schema } } },
  ...refusals,
});
const invalid: Json = {
  '422': {
    description: 'A parameter failed validation',
    content: { 'application/json': { schema: envelope } },
  },
};

const budgetParams: Json[] = [
  {
    name: 'app',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: 'An app name, or _global',
  },
  { name: 'period', in: 'path', required: true, schema: { type: 'string', enum: ['day', 'month'] } },
  {
    name: 'If-Match',
    in: 'header',
    required: false,
    schema: { type: 'string' },
    description: 'The version the change was made from',
  },
];
const budgetRefusals: Json = {
  '412': {
    description: 'precondition_failed: If-Match is stale; details.current is the budget now',
    content: { 'application/json': { schema: envelope } },
  },
};

/** One budget as GET /admin/budgets shows it (and PUT / DELETE answer it). */
const budgetSchema: Json = {
  type: 'object',
  required: [
    'scope',
    'period',
    'period_id',
    'limit_minor',
    'soft_minor',
    'spent_minor',
    'reserved_minor',
    'remaining_minor',
    'forecast_minor',
    'source',
    'version',
    'updated_by',
    'updated_at',
    'reason',
  ],
  properties: {
    app: { type: 'string', description: 'PUT / DELETE answers: the app, or _global' },
    scope: { type: 'string', enum: ['app', 'global'] },
    period: { type: 'string', enum: ['day', 'month'] },
    period_id: { type: 'string', description: 'e.g. 2026-11-28 or 2026-11' },
    limit_minor: { type: 'integer', nullable: true },
    soft_minor: { type: 'integer', nullable: true },
    spent_minor: { type: 'integer' },
    reserved_minor: { type: 'integer' },
    remaining_minor: { type: 'integer', nullable: true },
    forecast_minor: {
      type: 'integer',
      description:
        'Spend forecast for the end of the period: spent + the last 7 full days\' average daily spend over the time left, blended with today\'s pace for the day (README "Forecasts")',
    },
    source: { type: 'string', enum: ['config', 'admin'] },
    version: { type: 'integer' },
    updated_by: { type: 'string', nullable: true },
    updated_at: { type: 'string', format: 'date-time', nullable: true },
    reason: { type: 'string', nullable: true },
  },
};

/** What PUT and DELETE /admin/budgets/{app}/{period} answer. */
const budgetChange: Json = {
  type: 'object',
  required: ['budget', 'changed'],
  properties: {
    budget: budgetSchema,
    changed: { type: 'boolean', description: 'false: DELETE of a budget already on its config value' },
    audit_id: { type: 'string', description: 'The audit entry of the change (when changed)' },
  },
};

const int = { type: 'integer' };
const names = { type: 'array', items: { type: 'string' } };

/** GET /admin/limits (limits/governor-state.ts). */
const limitsSchema: Json = {
  type: 'object',
  required: ['at', 'classes', 'upstream_minute_cap', 'apps'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    classes: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', enum: ['key', 'search', 'suggest', 'check'] },
          limit: int,
          configured_limit: int,
          window_ms: int,
          used: int,
          paused_for_ms: int,
          queued: { type: 'object', additionalProperties: int, description: 'Waiting here, by app' },
          waiting_apps: names,
          competing_apps: names,
        },
      },
    },
    upstream_minute_cap: {
      type: 'object',
      nullable: true,
      properties: { reset_at_ms: int, limit: int, used: int },
    },
    apps: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          weight: { type: 'number' },
          priority: int,
          caps: { type: 'object', additionalProperties: int },
          waiting: int,
          granted: int,
          denied: { type: 'object', additionalProperties: int },
          wait_ms: {
            type: 'object',
            properties: { samples: int, median: int, p95: int, max: int },
          },
        },
      },
    },
  },
};

/** GET /admin/cache/stats (cache/cache-stats.ts; sections_from_dossier when that is on). */
const cacheStatsSchema: Json = {
  type: 'object',
  required: ['bytes', 'entries', 'entries_capped', 'routes'],
  properties: {
    bytes: { type: 'integer', nullable: true },
    entries: int,
    entries_capped: { type: 'boolean' },
    routes: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        properties: {
          hits: int,
          stale: int,
          misses: int,
          refreshes: int,
          not_cached: int,
          stores: int,
          errors: int,
          entries: int,
        },
      },
    },
    sections_from_dossier: { type: 'object', additionalProperties: true },
  },
};

export const ADMIN_PATHS: Record<string, Record<string, Json>> = {
  '/admin/openapi.json': { get: { summary: 'This document', responses: ok('OpenAPI 3.0.3 document') } },
  '/admin/ledger': {
    get: {
      summary:
        'Charges in [from, to): JSON pages (limit, next_cursor until complete) with pending charges and the outbox depth, or the whole range as one streamed CSV (no cap)',
      parameters: [
        {
          name: 'kind',
          in: 'query',
          schema: { type: 'string', enum: ['dossier', 'requisites', 'check', 'person'] },
          description: 'only charges of this kind',
        },
        {
          name: 'inn',
          in: 'query',
          schema: { type: 'string', pattern: '^(\\d{10}|\\d{12})$' },
          description: 'only charges for this company or person (check digits verified)',
        },
        {
          name: 'from',
          in: 'query',
          schema: { type: 'string' },
          description: 'ISO time or epoch ms (default: to - 31 days)',
        },
        {
          name: 'to',
          in: 'query',
          schema: { type: 'string' },
          description: 'ISO time or epoch ms, exclusive (default: now)',
        },
        { name: 'app', in: 'query', schema: { type: 'string' } },
        { name: 'format', in: 'query', schema: { type: 'string', enum: ['json', 'csv'] } },
        {
          name: 'limit',
          in: 'query',
          schema: { type: 'integer', minimum: 1, maximum: 10000, default: 1000 },
          description: 'Entries per JSON page (CSV: not accepted, the whole range streams)',
        },
        {
          name: 'cursor',
          in: 'query',
          schema: { type: 'string' },
          description:
            'next_cursor of the previous JSON page: resumes right after its last entry (carries from, to and app)',
        },
        {
          name: 'tz',
          in: 'query',
          schema: { type: 'string' },
          description:
            'IANA time zone of the times shown (default cost.timeZone); at_ms is always UTC epoch ms',
        },
      ],
      responses: {
        ...ok('One page of the ledger (JSON) or the whole range (text/csv, last column at_ms)', {
          type: 'object',
          required: ['count', 'total_minor', 'complete', 'next_cursor', 'entries', 'pending', 'outbox'],
          properties: {
            from: { type: 'string' },
            to: { type: 'string' },
            time_zone: { type: 'string' },
            count: { type: 'integer', description: 'Entries on this page' },
            total_minor: { type: 'integer', description: 'Sum of this page' },
            complete: { type: 'boolean', description: 'No entry of the range follows this page' },
            next_cursor: { type: 'string', nullable: true },
            entries: { type: 'array', items: { type: 'object', additionalProperties: true } },
            pending: { type: 'array', items: { type: 'object', additionalProperties: true } },
            outbox: { type: 'integer' },
          },
        }),
        ...invalid,
      },
    },
  },
  '/admin/statements/{month}': {
    get: {
      summary:
        'The month statement per app and in total: charges by kind, savings by reason, requests served and the share without paying, caps in force and their changes, the peak day; frozen once the month closed',
      parameters: [
        {
          name: 'month',
          in: 'path',
          required: true,
          schema: { type: 'string', pattern: '^\\d{4}-\\d{2}$' },
          description: 'YYYY-MM, a month of cost.timeZone',
        },
        { name: 'format', in: 'query', schema: { type: 'string', enum: ['json', 'csv'] } },
        {
          name: 'tz',
          in: 'query',
          schema: { type: 'string' },
          description:
            'IANA time zone of the times shown (default cost.timeZone); days stay cost.timeZone days',
        },
      ],
      responses: {
        ...ok('The statement (JSON) or one figure a line (text/csv: app,section,item,count,amount_minor)', {
          type: 'object',
          required: ['month', 'time_zone', 'state', 'apps', 'total'],
          properties: {
            month: { type: 'string' },
            time_zone: { type: 'string' },
            shown_in: { type: 'string' },
            state: {
              type: 'string',
              enum: ['open', 'closed'],
              description:
                'open until the month ended in cost.timeZone plus one day; closed: computed once and frozen',
            },
            from: { type: 'string' },
            to: { type: 'string' },
            closes_at: { type: 'string' },
            computed_at: { type: 'string' },
            apps: { type: 'array', items: { $ref: '#/components/schemas/StatementPart' } },
            total: { $ref: '#/components/schemas/StatementPart' },
          },
        }),
        '404': {
          description: 'The month has not begun yet (or the admin API is disabled)',
          content: { 'application/json': { schema: envelope } },
        },
        ...invalid,
      },
    },
  },
  '/admin/reconciliation': {
    get: {
      summary:
        "The vendor's wallet against the ledger: per /v1/me snapshot interval and per day, debit, ledger, unattributed spend, top-ups (JSON) or per day as CSV",
      parameters: [
        { name: 'from', in: 'query', schema: { type: 'string' }, description: 'ISO time or epoch ms' },
        { name: 'to', in: 'query', schema: { type: 'string' }, description: 'ISO time or epoch ms' },
        { name: 'format', in: 'query', schema: { type: 'string', enum: ['json', 'csv'] } },
      ],
      responses: {
        ...ok('Reconciliation', {
          type: 'object',
          required: ['totals', 'days', 'intervals'],
          properties: {
            from: { type: 'string' },
            to: { type: 'string' },
            time_zone: { type: 'string' },
            snapshots: { type: 'integer' },
            totals: {
              type: 'object',
              properties: {
                vendor_debit_minor: { type: 'integer' },
                unattributed_minor: { type: 'integer' },
                top_up_minor: { type: 'integer' },
              },
            },
            days: { type: 'array', items: { type: 'object', additionalProperties: true } },
            intervals: { type: 'array', items: { type: 'object', additionalProperties: true } },
          },
        }),
        ...invalid,
      },
    },
  },
  '/admin/budgets': {
    get: {
      summary:
        "Every app's and the global budgets, current periods: limit, soft, spent, reserved, remaining, forecast, source, version, updated_by, updated_at",
      responses: ok('Budgets', {
        type: 'object',
        required: ['time_zone', 'budgets'],
        properties: {
          time_zone: { type: 'string' },
          budgets: {
            type: 'object',
            description: 'By app name, and *global* for the global budgets',
            additionalProperties: { type: 'array', items: budgetSchema },
          },
        },
      }),
    },
  },
  '/admin/replicas': {
    get: {
      summary:
        'The live replicas on the shared store (heartbeats every 10 s, 30 s TTL): id, version, config hash, started, last seen; agree = one config hash and one version',
      responses: ok('Replicas', {
        type: 'object',
        required: ['answered_by', 'config_hash', 'count', 'agree', 'config_hashes', 'versions', 'replicas'],
        properties: {
          answered_by: { type: 'string', description: 'The id of the replica that answered' },
          config_hash: { type: 'string', description: "The answering replica's config hash" },
          count: { type: 'integer' },
          agree: { type: 'boolean' },
          config_hashes: { type: 'object', additionalProperties: { type: 'integer' } },
          versions: { type: 'object', additionalProperties: { type: 'integer' } },
          replicas: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'host', 'version', 'config_hash', 'started_at', 'last_seen_at'],
              properties: {
                id: { type: 'string' },
                host: { type: 'string' },
                version: { type: 'string' },
                config_hash: {
                  type: 'string',
                  description: 'SHA-256 (16 hex digits) of the effective config without secrets',
                },
                started_at: { type: 'string', format: 'date-time' },
                last_seen_at: { type: 'string', format: 'date-time' },
              },
            },
          },
        },
      }),
    },
  },
  '/admin/budgets/{app}/{period}': {
    put: {
      summary: 'Sets a budget (wins over the config until DELETEd); every replica applies it within 1 s',
      parameters: budgetParams,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['limit_minor', 'reason'],
              additionalProperties: false,
              properties: {
                limit_minor: { type: 'integer', minimum: 0, nullable: true },
                soft_minor: { type: 'integer', minimum: 0, nullable: true },
                reason: { type: 'string', minLength: 1, maxLength: 500 },
              },
            },
          },
        },
      },
      responses: {
        ...ok('The budget as it is now; ETag: its version', budgetChange),
        ...invalid,
        ...budgetRefusals,
      },
    },
    delete: {
      summary: 'Returns a budget to its config value (reason in the body or X-Audit-Reason)',
      parameters: budgetParams,
      requestBody: {
        required: false,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: { reason: { type: 'string', minLength: 1, maxLength: 500 } },
            },
          },
        },
      },
      responses: {
        ...ok('The budget as it is now; ETag: its version', budgetChange),
        ...invalid,
        ...budgetRefusals,
      },
    },
  },
  '/admin/audit': {
    get: {
      summary: 'The audit trail of admin mutations (kept 400 days), oldest first, paged by cursor',
      parameters: [
        { name: 'from', in: 'query', schema: { type: 'string' }, description: 'ISO time or epoch ms' },
        {
          name: 'to',
          in: 'query',
          schema: { type: 'string' },
          description: 'ISO time or epoch ms (exclusive)',
        },
        { name: 'actor', in: 'query', schema: { type: 'string' } },
        { name: 'action', in: 'query', schema: { type: 'string' } },
        { name: 'format', in: 'query', schema: { type: 'string', enum: ['json', 'csv'] } },
        {
          name: 'cursor',
          in: 'query',
          schema: { type: 'string' },
          description: 'next_cursor of the previous page (CSV: the X-Next-Cursor header)',
        },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
      ],
      responses: {
        ...ok('Entries', {
          type: 'object',
          required: ['count', 'entries', 'next_cursor'],
          properties: {
            from: { type: 'string' },
            to: { type: 'string' },
            count: { type: 'integer' },
            entries: { type: 'array', items: { type: 'object', additionalProperties: true } },
            next_cursor: { type: 'string', nullable: true },
          },
        }),
        ...invalid,
      },
    },
  },
  '/admin/windows': { get: { summary: 'Companies with an open window', responses: ok('Windows') } },
  '/admin/cache/{inn}': {
    delete: {
      summary: 'Purges every cached answer about one company',
      parameters: [
        {
          name: 'inn',
          in: 'path',
          required: true,
          schema: { type: 'string', pattern: '^(\\d{10}|\\d{12})$' },
        },
      ],
      responses: { ...ok('How many entries were purged'), ...invalid },
    },
  },
  '/admin/cache/stats': {
    get: { summary: 'Cache counters per route', responses: ok('Cache statistics', cacheStatsSchema) },
  },
  '/admin/apps': { get: { summary: 'Configured apps (never token hashes)', responses: ok('Apps') } },
  '/admin/limits': {
    get: { summary: 'Rate classes, queues and waits', responses: ok('Limiter state', limitsSchema) },
  },
  '/admin/webhooks': {
    get: {
      summary: 'Deliveries of check events to apps',
      parameters: [
        { name: 'state', in: 'query', schema: { type: 'string', enum: ['pending', 'delivered', 'failed'] } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
      ],
      responses: { ...ok('Deliveries'), ...invalid },
    },
  },
  '/admin/webhooks/redeliver': {
    post: {
      summary: 'Queues failed deliveries to apps again (all, or one app and/or one check)',
      requestBody: {
        required: false,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              additionalProperties: false,
              properties: {
                app: { type: 'string' },
                check_id: { type: 'string' },
                reason: { type: 'string', maxLength: 500 },
              },
            },
          },
        },
      },
      responses: { ...ok('How many were queued'), ...invalid },
    },
  },
  '/admin/reload': {
    post: {
      summary: 'Re-reads the config files and applies them (as SIGHUP)',
      responses: { ...ok('Applied'), ...invalid },
    },
  },
  '/admin/reconcile': {
    post: { summary: 'Runs one reconciler round now', responses: ok('What it resolved') },
  },
  '/admin/prices/refresh': {
    post: { summary: "Re-reads the upstream's GET /v1/me now", responses: ok('Prices') },
  },
};

export function adminOpenApi(serverUrl: string): Json {
  return {
    openapi: '3.0.3',
    info: {
      title: 'counterparty-gateway admin API',
      version: '1.0',
      description:
        "Operations for finance and platform teams: ledger, budgets, windows, cache, limits, reload. Every JSON field name, in answers and in accepted bodies, is snake_case (as the upstream API's); a camelCase field in a body is refused with 422 naming the snake_case one.",
    },
    servers: [{ url: serverUrl }],
    security: [{ adminToken: [] }],
    paths: ADMIN_PATHS,
    components: {
      securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'meta'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'details'],
              properties: {
                code: { type: 'string' },
                message: { type: 'string' },
                details: { type: 'object', additionalProperties: true },
              },
            },
            meta: {
              type: 'object',
              required: ['request_id'],
              properties: { request_id: { type: 'string' } },
            },
          },
        },
        StatementPart: {
          type: 'object',
          description: 'One app of a statement, or the total (app "_total", its caps the global ones)',
          required: ['app', 'charges', 'savings', 'requests', 'caps', 'cap_changes', 'peak_day', 'days'],
          properties: {
            app: { type: 'string' },
            charges: {
              type: 'object',
              description: 'From the ledger: count and amount, by kind',
              properties: {
                count: { type: 'integer' },
                amount_minor: { type: 'integer' },
                by_kind: { type: 'array', items: { type: 'object', additionalProperties: true } },
              },
            },
            savings: {
              type: 'object',
              description:
                'Saved minor units by reason and by kind (cache, window, coalesced, idempotent, derived)',
              additionalProperties: true,
            },
            requests: {
              type: 'object',
              properties: {
                served: { type: 'integer' },
                unpaid: { type: 'integer', description: 'Served without paying a charge' },
                paid: { type: 'integer' },
                unpaid_share: { type: 'number', nullable: true },
              },
            },
            caps: { type: 'array', items: { type: 'object', additionalProperties: true } },
            cap_changes: {
              type: 'array',
              description: 'budget_set / budget_reset entries of the audit trail in the month',
              items: { type: 'object', additionalProperties: true },
            },
            peak_day: { type: 'object', nullable: true, additionalProperties: true },
            days: { type: 'array', items: { type: 'object', additionalProperties: true } },
          },
        },
      },
    },
  };
}
