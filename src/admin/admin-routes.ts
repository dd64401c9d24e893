// The admin API under /admin/, behind named admin tokens with roles (config admin.tokens and
// admin.tokenHash; none = the whole API answers 404; rights per role in auth/admin-roles.ts):
// spend ledger export (JSON or CSV, by period and app), budgets of every app (set and reset in
// finance/budget-routes.ts), the audit trail, open windows, cache purge by INN and cache
// statistics, the shared rate budgets' state and queues, the webhook deliveries to apps (state,
// attempts, next try), and POST /admin/reload. Every mutation is recorded in the audit trail
// (actor, role, client, request id, before, after, reason). Refusals use the upstream's envelope.
//
// Must never: run a route before its right is checked, or put a token into a log line or entry.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type AdminPrincipal, type AdminRight, authorizeAdmin } from '../auth/admin-roles.ts';
import type { DeliveryRecord, WebhookDeliveries } from '../checks/webhook-deliveries.ts';
import { ConfigError } from '../config/load.ts';
import { localDates } from '../cost/budget-periods.ts';
import { byDay, reconcile } from '../cost/wallet-reconciliation.ts';
import { checkInn, parseJsonBody } from '../domain/requests.ts';
import { ApiError, type FieldProblem } from '../errors.ts';
import { type AuditTrail, changedConfigKeys } from '../finance/audit-trail.ts';
import { type FinanceRoutesOptions, registerFinanceRoutes } from '../finance/budget-routes.ts';
import { unknownFields } from '../json-case.ts';
import { jsonArrayInTurns, jsonWithArrays } from '../json-in-turns.ts';
import { adminOpenApi } from '../openapi/admin-openapi.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import { UUID } from '../route-table.ts';

/**
 * Checks the caller's admin token (and its role's right) against the config in force now;
 * answers that config's deps and who the caller is. During a rotation the previous token is
 * accepted too; every hash is compared in constant time.
 */
function authorize(
  request: FastifyRequest,
  current: () => PipelineDeps,
  right: AdminRight,
): { deps: PipelineDeps; principal: AdminPrincipal } {
  const deps = current();
  const principal = authorizeAdmin(request, deps.config.admin, right);
  return { deps, principal };
}

/** What the admin routes need of finance: the audit trail and the budget routes' parts. */
export interface AdminFinance {
  trail: AuditTrail;
  routes: Omit<FinanceRoutesOptions, 'current' | 'authorize' | 'trail'>;
}

/** Accepts ISO dates/times or epoch milliseconds; 422 naming `field` otherwise. */
export function parseTime(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw ApiError.validation([
      { field, code: 'invalid_time', message: `${field} must be an ISO date-time or epoch ms` },
    ]);
  }
  return ms;
}

export function registerAdminRoutes(
  app: FastifyInstance,
  current: () => PipelineDeps,
  reload: () => { apps: string[]; restartNeeded: string[] },
  extra: { webhooks?: WebhookDeliveries; finance: AdminFinance },
): void {
  const { trail } = extra.finance;
  const requireAdmin = (request: FastifyRequest, right: AdminRight) => authorize(request, current, right);
  registerFinanceRoutes(app, { ...extra.finance.routes, current, authorize: requireAdmin, trail });

  // The document's keys are OpenAPI's own vocabulary (requestBody, additionalProperties): written
  // as they are, not made snake_case (json-case.ts).
  app.get('/admin/openapi.json', { config: { jsonKeys: 'verbatim' } }, async (request) => {
    requireAdmin(request, 'read');
    const base = `${request.protocol}://${request.headers.host ?? 'localhost'}`;
    return adminOpenApi(base);
  });

  // Re-reads the config files and applies apps, tokens, scopes, budgets, limits and cache ages
  // (the same as SIGHUP). A bad file: 422 listing every problem; the running config stays.
  app.post('/admin/reload', async (request) => {
    const { principal } = requireAdmin(request, 'reload');
    try {
      const before = current().config;
      const result = reload();
      const changed = changedConfigKeys(before, current().config);
      await trail.append(
        trail.entry(principal, request, {
          action: 'reload',
          target: 'config',
          before: null,
          after: { changed_keys: changed, apps: result.apps, restart_needed: result.restartNeeded },
        }),
      );
      request.log.warn(
        { actor: principal.name, apps: result.apps, restartNeeded: result.restartNeeded, changed },
        'configuration reloaded',
      );
      return { reloaded: true, apps: result.apps, restart_needed: result.restartNeeded };
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message];
      request.log.warn({ problems }, 'configuration reload refused; the running config stays');
      throw ApiError.validation(
        problems.map((message) => ({ field: 'config', code: 'invalid_config', message })),
      );
    }
  });

  // The vendor's wallet against the ledger (issue 28): per interval between /v1/me snapshots and
  // per day, the vendor's debit, the ledger's charges, unattributed spend and top-ups.
  app.get('/admin/reconciliation', async (request, reply) => {
    const { deps } = requireAdmin(request, 'read');
    const q = request.query as Record<string, string | undefined>;
    const format = q.format ?? 'json';
    if (format !== 'json' && format !== 'csv') {
      throw ApiError.validation([
        { field: 'format', code: 'invalid_value', message: 'format must be json or csv' },
      ]);
    }
    const to = parseTime(q.to, 'to', deps.clock.now() + 1);
    const from = parseTime(q.from, 'from', to - 7 * 86_400_000);
    if (from >= to || to - from > 400 * 86_400_000) {
      throw ApiError.validation([
        { field: 'from', code: 'invalid_range', message: 'from must be before to, at most 400 days apart' },
      ]);
    }
    const snapshots = await deps.walletSnapshots.read(from, to);
    const first = snapshots[0]?.asOf ?? from;
    const entries = await deps.ledger.read(Math.min(first, from) - deps.walletLagMs, to);
    const intervals = reconcile(snapshots, entries, deps.walletLagMs);
    const zone = deps.config.cost.timeZone;
    const days = byDay(intervals, entries, localDates(zone));
    const sum = (k: 'unattributedMinor' | 'topUpMinor' | 'vendorDebitMinor') =>
      intervals.reduce((n, r) => n + r[k], 0);
    if (format === 'csv') {
      const lines = ['day,vendor_debit_minor,ledger_minor,unattributed_minor,top_up_minor,balance_minor'];
      for (const d of days)
        lines.push(
          [d.day, d.vendorDebitMinor, d.ledgerMinor, d.unattributedMinor, d.topUpMinor, d.balanceMinor].join(
            ',',
          ),
        );
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="cpgw-reconciliation.csv"')
        .send(`${lines.join('\n')}\n`);
    }
    // Intervals may be 10,000 (a snapshot a minute for a week): written 250 a turn of the event
    // loop, as JSON text (json-in-turns.ts).
    const intervalsJson = await jsonArrayInTurns(intervals, (r) => ({
      from: new Date(r.from).toISOString(),
      to: new Date(r.to).toISOString(),
      balance_from_minor: r.balanceFrom,
      balance_to_minor: r.balanceTo,
      vendor_debit_minor: r.vendorDebitMinor,
      ledger_minor: r.ledgerMinor,
      uncertain_minor: r.uncertainMinor,
      unattributed_minor: r.unattributedMinor,
      top_up_minor: r.topUpMinor,
    }));
    const head = {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      time_zone: zone,
      snapshots: snapshots.length,
      totals: {
        vendor_debit_minor: sum('vendorDebitMinor'),
        unattributed_minor: sum('unattributedMinor'),
        top_up_minor: sum('topUpMinor'),
      },
      days: days.map((d) => ({
        day: d.day,
        vendor_debit_minor: d.vendorDebitMinor,
        ledger_minor: d.ledgerMinor,
        unattributed_minor: d.unattributedMinor,
        top_up_minor: d.topUpMinor,
        balance_minor: d.balanceMinor,
      })),
    };
    return reply
      .type('application/json; charset=utf-8')
      .send(jsonWithArrays(head, { intervals: intervalsJson }));
  });

  // GET /admin/ledger (JSON pages, CSV stream) and /admin/statements: finance/statement-routes.ts.

  app.post('/admin/prices/refresh', async (request) => {
    const { deps, principal } = requireAdmin(request, 'prices_refresh');
    // Reads the upstream's GET /v1/me now (it is also re-read every cost.pricesRefreshSeconds).
    const before = deps.prices.snapshot().me?.prices ?? null;
    await deps.prices.refresh();
    const { me, refreshedAt } = deps.prices.snapshot();
    await trail.append(
      trail.entry(principal, request, {
        action: 'prices_refresh',
        target: 'prices',
        before: { prices: before },
        after: { prices: me?.prices ?? null },
      }),
    );
    return {
      refreshed_at: refreshedAt ? new Date(refreshedAt).toISOString() : null,
      prices: me?.prices ?? null,
      wallet_known: me?.wallet != null,
    };
  });

  app.post('/admin/reconcile', async (request) => {
    const { deps, principal } = requireAdmin(request, 'reconcile');
    // One reconciler round now (it also runs every cost.reconcileIntervalMs on every replica).
    const resolved = await deps.reconciler.runOnce();
    await trail.append(
      trail.entry(principal, request, {
        action: 'reconcile',
        target: 'pending_charges',
        before: null,
        after: { resolved },
      }),
    );
    return { resolved };
  });

  app.get('/admin/budgets', async (request) => {
    const { deps } = requireAdmin(request, 'read');
    const names = deps.config.apps.map((a) => a.name);
    return { time_zone: deps.config.cost.timeZone, budgets: await deps.budgets.overview(names) };
  });

  app.get('/admin/windows', async (request) => {
    const { deps } = requireAdmin(request, 'read');
    const windows = await deps.windows.list();
    return {
      count: windows.length,
      windows: windows.map((w) => ({
        inn: w.inn,
        dossier_until: w.dossierUntil ? new Date(w.dossierUntil).toISOString() : null,
        requisites_until: w.requisitesUntil ? new Date(w.requisitesUntil).toISOString() : null,
      })),
    };
  });

  app.delete('/admin/cache/:inn', async (request) => {
    const { deps, principal } = requireAdmin(request, 'cache_purge');
    const { inn } = request.params as { inn: string };
    const problems = checkInn(inn);
    if (problems.length) throw ApiError.validation(problems);
    const purged = await deps.cache.purgeInn(inn);
    await trail.append(
      trail.entry(principal, request, {
        action: 'cache_purge',
        target: `cache:${inn}`,
        before: null,
        after: { purged },
      }),
    );
    return { inn, purged };
  });

  app.get('/admin/cache/stats', async (request) => {
    const { deps } = requireAdmin(request, 'read');
    const stats = await deps.cache.stats();
    return deps.sections ? { ...stats, sections_from_dossier: await deps.sections.snapshot() } : stats;
  });

  app.get('/admin/apps', async (request) => {
    const { deps } = requireAdmin(request, 'read');
    return {
      apps: deps.config.apps.map((a) => ({
        name: a.name,
        scopes: a.scopes,
        budgets: a.budgets,
        limits: a.limits,
      })),
    };
  });

  // Every rate class (limit, used in the last window, pause, queued per app, apps waiting on
  // any replica), the upstream's own minute cap when it reported one, and per-app waits.
  app.get('/admin/limits', async (request) => {
    const { deps } = requireAdmin(request, 'read');
    const state = await deps.upstream.governor.state();
    return { ...state, at: new Date(state.at).toISOString() };
  });

  // Queues the failed deliveries again, all of them or those of one app and/or one check (once
  // an app's endpoint is fixed): each gets the whole retry schedule again.
  app.post('/admin/webhooks/redeliver', async (request) => {
    const { deps, principal } = requireAdmin(request, 'webhooks_redeliver');
    const problems: FieldProblem[] = [];
    // Bodies arrive raw (server/app.ts): none means no filter.
    const raw = Buffer.isBuffer(request.body) ? request.body : undefined;
    const parsed = raw && raw.toString('utf8').trim() !== '' ? parseJsonBody(raw) : {};
    const isObject = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed);
    if (!isObject) {
      problems.push({ field: 'body', code: 'invalid_value', message: 'body must be a JSON object' });
    }
    const body = (isObject ? parsed : {}) as Record<string, unknown>;
    // An ignored `checkId` would redeliver every failed delivery instead of one check's.
    problems.push(...unknownFields(body, ['app', 'check_id', 'reason'], 'redelivery'));
    const { app: name, check_id: checkId, reason } = body;
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 500)) {
      problems.push({
        field: 'reason',
        code: 'invalid_value',
        message: 'reason must be a text of at most 500 characters',
      });
    }
    if (name !== undefined && (typeof name !== 'string' || !deps.config.apps.some((a) => a.name === name))) {
      problems.push({ field: 'app', code: 'invalid_value', message: 'app must name a configured app' });
    }
    if (checkId !== undefined && (typeof checkId !== 'string' || !UUID.test(checkId))) {
      problems.push({ field: 'check_id', code: 'invalid_value', message: 'check_id must be a check id' });
    }
    if (problems.length > 0) throw ApiError.validation(problems);
    const filter: { app?: string; checkId?: string } = {};
    if (typeof name === 'string') filter.app = name;
    if (typeof checkId === 'string') filter.checkId = checkId;
    const redelivered = (await extra.webhooks?.redeliver(filter)) ?? 0;
    await trail.append(
      trail.entry(principal, request, {
        action: 'webhooks_redeliver',
        target: `webhooks:${filter.app ?? '*'}:${filter.checkId ?? '*'}`,
        before: null,
        after: { redelivered },
        reason: typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : null,
      }),
    );
    request.log.info({ ...filter, redelivered }, 'failed webhook deliveries queued again');
    return { redelivered };
  });

  // Deliveries of check events to apps' webhooks: pending ones with their next attempt, failed
  // ones with every attempt's status or error (the body is left out: a dossier is ~100 KB). The
  // counts cover every delivery kept (7 days); the list, the newest `limit` (default 100).
  app.get('/admin/webhooks', async (request) => {
    requireAdmin(request, 'read');
    const q = request.query as Record<string, string | undefined>;
    const problems: FieldProblem[] = [];
    if (q.state !== undefined && !['pending', 'delivered', 'failed'].includes(q.state)) {
      problems.push({
        field: 'state',
        code: 'invalid_value',
        message: 'state must be pending, delivered or failed',
      });
    }
    const limit = q.limit === undefined ? 100 : Number(q.limit);
    if (!/^\d+$/.test(q.limit ?? '100') || limit < 1 || limit > 1000) {
      problems.push({
        field: 'limit',
        code: 'invalid_value',
        message: 'limit must be an integer from 1 to 1000',
      });
    }
    if (problems.length > 0) throw ApiError.validation(problems);
    const state = q.state as DeliveryRecord['state'] | undefined;
    const overview = (await extra.webhooks?.overview(state, limit)) ?? {
      pending: 0,
      delivered: 0,
      failed: 0,
      records: [],
    };
    const shown = overview.records;
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      count: shown.length,
      pending: overview.pending,
      delivered: overview.delivered,
      failed: overview.failed,
      deliveries: shown.map((r) => ({
        check_id: r.checkId,
        app: r.app,
        url: r.url,
        event_id: r.eventId,
        event: r.event,
        delivery: r.delivery,
        state: r.state,
        created_at: iso(r.createdAt),
        next_attempt_at: iso(r.nextAt),
        attempts: r.attempts.map((a) => ({
          at: iso(a.at),
          status: a.status,
          ...(a.error ? { error: a.error } : {}),
        })),
      })),
    };
  });
}
