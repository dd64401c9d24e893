// The finance part of the admin API: budgets as data and the audit trail.
//
//   PUT    /admin/budgets/{app|_global}/{day|month}   {"limit_minor": N|null, "soft_minor": N|null, "reason": "..."}
//   DELETE /admin/budgets/{app|_global}/{day|month}   back to the config value (reason in the body or X-Audit-Reason)
//   GET    /admin/audit?from=&to=&actor=&action=&format=json|csv&cursor=&limit=
//
// A write reads the stored budget, checks If-Match against its version (412 with the current
// budget when stale), then makes ONE atomic FinanceStore step: compare the version again, store
// the budget, append the audit entry, bump the settings version. It then announces the new
// settings version on the store's bus (every replica refreshes at once) and refreshes its own
// copy; a replica that missed the message sees the version on its next reserve (budget-overrides.ts).
//
// Must never: change anything on a refusal (404 unknown app or period, 422 a bad field, 412 a
// stale If-Match, 403 a role without the right), or answer a refusal outside the envelope.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AdminPrincipal, AdminRight } from '../auth/admin-roles.ts';
import type { Clock } from '../clock.ts';
import { PERIODS, type Period } from '../cost/budget-periods.ts';
import { parseJsonBody } from '../domain/requests.ts';
import { ApiError, type FieldProblem } from '../errors.ts';
import { unknownFields } from '../json-case.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import type { BusStore } from '../store/bus-store.ts';
import { type AuditTrail, auditCsv, auditJson, MAX_REASON_CHARS } from './audit-trail.ts';
import { BUDGETS_CHANNEL, type BudgetOverrides } from './budget-overrides.ts';
import { AUDIT_ID, type FinanceStore, GLOBAL_SCOPE, type StoredBudget } from './finance-store.ts';

export interface FinanceRoutesOptions {
  current: () => PipelineDeps;
  authorize: (
    request: FastifyRequest,
    right: AdminRight,
  ) => { deps: PipelineDeps; principal: AdminPrincipal };
  store: FinanceStore;
  overrides: BudgetOverrides;
  trail: AuditTrail;
  bus: BusStore;
  clock: Clock;
}

/** Compare-and-set attempts when another writer moves the version in between (no If-Match). */
const WRITE_ATTEMPTS = 5;
const MAX_AUDIT_PAGE = 1000;

/** A budget's figures as the audit trail and a 412 show them. */
function budgetFigures(b: {
  limitMinor: number | null;
  softMinor: number | null;
  source: string;
  version: number;
}) {
  return { limit_minor: b.limitMinor, soft_minor: b.softMinor, source: b.source, version: b.version };
}

function target(request: FastifyRequest, deps: PipelineDeps): { scope: string; period: Period } {
  const { scope, period } = request.params as { scope: string; period: string };
  if (scope !== GLOBAL_SCOPE && !deps.config.apps.some((a) => a.name === scope))
    throw new ApiError('not_found', { app: scope }, `No app named ${scope} (or ${GLOBAL_SCOPE})`);
  if (!(PERIODS as readonly string[]).includes(period))
    throw new ApiError('not_found', { period }, `No budget period ${period} (day or month)`);
  return { scope, period: period as Period };
}

function bodyObject(request: FastifyRequest, problems: FieldProblem[]): Record<string, unknown> {
  const raw = Buffer.isBuffer(request.body) ? request.body : undefined;
  const parsed = raw && raw.toString('utf8').trim() !== '' ? parseJsonBody(raw) : {};
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    problems.push({ field: 'body', code: 'invalid_value', message: 'body must be a JSON object' });
    return {};
  }
  return parsed as Record<string, unknown>;
}

function amount(body: Record<string, unknown>, field: string, required: boolean, problems: FieldProblem[]) {
  if (!(field in body)) {
    if (required)
      problems.push({ field, code: 'required', message: `${field} is required (kopecks, or null for none)` });
    return null;
  }
  const v = body[field];
  if (v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    problems.push({
      field,
      code: 'invalid_value',
      message: `${field} must be a non-negative whole number of kopecks or null`,
    });
    return null;
  }
  return v;
}

function reasonOf(body: Record<string, unknown>, required: boolean, problems: FieldProblem[]): string | null {
  const v = body.reason;
  if (v === undefined && !required) return null;
  if (typeof v !== 'string' || v.trim() === '' || v.length > MAX_REASON_CHARS) {
    problems.push({
      field: 'reason',
      code: v === undefined ? 'required' : 'invalid_value',
      message: `reason is required: a non-empty text of at most ${MAX_REASON_CHARS} characters`,
    });
    return null;
  }
  return v.trim();
}

/** If-Match as a version number: `3`, `"3"` or `W/"3"`; absent (or malformed, reported): undefined. */
function ifMatch(request: FastifyRequest, problems: FieldProblem[]): number | undefined {
  const header = request.headers['if-match'];
  if (header === undefined) return undefined;
  const m = /^\s*(?:W\/)?"?(\d{1,15})"?\s*$/.exec(String(header));
  if (!m) {
    problems.push({
      field: 'If-Match',
      code: 'invalid_value',
      message: 'If-Match must be a budget version (a whole number)',
    });
    return undefined;
  }
  return Number(m[1]);
}

export function registerFinanceRoutes(app: FastifyInstance, o: FinanceRoutesOptions): void {
  /** One budget as GET /admin/budgets shows it (after this replica's copy is fresh). */
  const statusOf = async (deps: PipelineDeps, scope: string, period: Period) => {
    const list = await deps.budgets.status(
      scope === GLOBAL_SCOPE ? (deps.config.apps[0]?.name ?? '') : scope,
    );
    const want = scope === GLOBAL_SCOPE ? 'global' : 'app';
    const found = list.find((s) => s.scope === want && s.period === period)!;
    return { app: scope, ...found };
  };

  /** The budget in force now, with the stored record's version, from a fresh store read. */
  const effective = (deps: PipelineDeps, scope: string, period: Period, stored: StoredBudget | null) => {
    if (stored?.source === 'admin') return stored;
    const base = deps.budgets.baseline(scope, period);
    return {
      source: 'config' as const,
      limitMinor: base?.limitMinor ?? null,
      softMinor: base?.softMinor ?? null,
      version: stored?.version ?? 0,
    };
  };

  const write = async (request: FastifyRequest, reply: FastifyReply, change: 'set' | 'reset') => {
    const { deps, principal } = o.authorize(request, 'budgets_write');
    const { scope, period } = target(request, deps);
    const problems: FieldProblem[] = [];
    const body = bodyObject(request, problems);
    let limitMinor: number | null = null;
    let softMinor: number | null = null;
    if (change === 'set') {
      // snake_case only: a camelCase `limitMinor` (GET /admin/budgets' old spelling) is a 422
      // naming `limit_minor`, never a silent no-op (README "Field names").
      problems.push(...unknownFields(body, ['limit_minor', 'soft_minor', 'reason'], 'budget'));
      limitMinor = amount(body, 'limit_minor', true, problems);
      softMinor = amount(body, 'soft_minor', false, problems);
      if (limitMinor !== null && softMinor !== null && softMinor > limitMinor)
        problems.push({
          field: 'soft_minor',
          code: 'invalid_value',
          message: 'soft_minor must not exceed limit_minor',
        });
    }
    const header = request.headers['x-audit-reason'];
    const reason =
      change === 'reset' && body.reason === undefined && typeof header === 'string' && header.trim() !== ''
        ? header.trim().slice(0, MAX_REASON_CHARS)
        : reasonOf(body, true, problems);
    const expected = ifMatch(request, problems);
    if (problems.length > 0) throw ApiError.validation(problems);

    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const stored = await o.store.readBudget(scope, period);
      const version = stored?.version ?? 0;
      const before = effective(deps, scope, period, stored);
      if (expected !== undefined && expected !== version)
        throw new ApiError(
          'precondition_failed',
          { app: scope, period, current: budgetFigures(before) },
          `Budget ${scope}/${period} is at version ${version}, not ${expected}`,
          { headers: { etag: `"${version}"` } },
        );
      if (change === 'reset' && before.source === 'config')
        return reply
          .header('etag', `"${version}"`)
          .send({ budget: await statusOf(deps, scope, period), changed: false });
      const now = o.clock.now();
      const next: StoredBudget = {
        scope,
        period,
        source: change === 'set' ? 'admin' : 'config',
        limitMinor: change === 'set' ? limitMinor : null,
        softMinor: change === 'set' ? softMinor : null,
        version: version + 1,
        updatedBy: principal.name,
        updatedAt: now,
        reason: reason!,
      };
      const after = effective(deps, scope, period, next);
      const audit = o.trail.entry(principal, request, {
        action: change === 'set' ? 'budget_set' : 'budget_reset',
        target: `budget:${scope}:${period}`,
        before: budgetFigures(before),
        after: budgetFigures(after),
        reason,
      });
      const result = await o.store.writeBudget({ budget: next, expectVersion: version, audit });
      if (!result.ok) continue;
      // Every replica refreshes on the message; one that misses it, on its next reserve.
      await o.bus
        .publish(BUDGETS_CHANNEL, String(result.settingsVersion))
        .catch((err: unknown) =>
          request.log.warn(
            { err: (err as Error)?.message },
            'budget change not announced; replicas see it within a second',
          ),
        );
      await o.overrides.invalidate();
      request.log.warn(
        {
          actor: principal.name,
          role: principal.role,
          budget: `${scope}/${period}`,
          before: audit.before,
          after: audit.after,
        },
        change === 'set' ? 'budget set' : 'budget returned to the config value',
      );
      return reply.header('etag', `"${next.version}"`).send({
        budget: await statusOf(o.current(), scope, period),
        changed: true,
        audit_id: result.auditId,
      });
    }
    const now = await o.store.readBudget(scope, period);
    throw new ApiError(
      'precondition_failed',
      { app: scope, period, current: budgetFigures(effective(deps, scope, period, now)) },
      'The budget kept changing under this request; read it again and retry',
    );
  };

  app.put('/admin/budgets/:scope/:period', (request, reply) => write(request, reply, 'set'));
  app.delete('/admin/budgets/:scope/:period', (request, reply) => write(request, reply, 'reset'));

  app.get('/admin/audit', async (request, reply) => {
    o.authorize(request, 'read');
    const q = request.query as Record<string, string | undefined>;
    const problems: FieldProblem[] = [];
    const time = (field: 'from' | 'to', fallback: number) => {
      const value = q[field];
      if (value === undefined || value === '') return fallback;
      const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
      if (!Number.isFinite(ms)) {
        problems.push({
          field,
          code: 'invalid_time',
          message: `${field} must be an ISO date-time or epoch ms`,
        });
        return fallback;
      }
      return ms;
    };
    const to = time('to', o.clock.now() + 1);
    const from = time('from', 0);
    const format = q.format ?? 'json';
    if (format !== 'json' && format !== 'csv')
      problems.push({ field: 'format', code: 'invalid_value', message: 'format must be json or csv' });
    if (q.cursor !== undefined && !AUDIT_ID.test(q.cursor))
      problems.push({
        field: 'cursor',
        code: 'invalid_value',
        message: 'cursor must be a next_cursor this API gave',
      });
    const limit = q.limit === undefined ? 100 : Number(q.limit);
    if (!/^\d+$/.test(q.limit ?? '100') || limit < 1 || limit > MAX_AUDIT_PAGE)
      problems.push({
        field: 'limit',
        code: 'invalid_value',
        message: `limit must be an integer from 1 to ${MAX_AUDIT_PAGE}`,
      });
    if (problems.length > 0) throw ApiError.validation(problems);
    const page = await o.store.readAudit({
      from,
      to,
      limit,
      ...(q.actor ? { actor: q.actor } : {}),
      ...(q.action ? { action: q.action } : {}),
      ...(q.cursor ? { after: q.cursor } : {}),
    });
    if (format === 'csv') {
      if (page.next) reply.header('x-next-cursor', page.next);
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="cpgw-audit.csv"')
        .send(auditCsv(page.entries));
    }
    return {
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      count: page.entries.length,
      entries: page.entries.map(auditJson),
      next_cursor: page.next,
    };
  });
}
