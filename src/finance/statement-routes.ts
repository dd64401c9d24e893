// Finance's read routes over the money record (issue 29 items 5 and 6), right `read` (admin,
// finance and viewer tokens):
// - GET /admin/ledger: the spend ledger of [from, to) as JSON pages (`limit`, default 1000, at
//   most 10,000; `next_cursor` resumes right after the page's last record; `complete` says
//   whether more remain) or as one CSV streamed page by page (no cap, bounded memory). Times are
//   shown with the offset of `tz` (default cost.timeZone); every row also has `at_ms` (UTC ms).
// - GET /admin/statements/{YYYY-MM}: the month statement per app and in total (statements.ts):
//   charges from the ledger, savings and served requests from their counters (savings-record.ts),
//   caps in force and their changes from the audit trail. A closed month (its end in
//   cost.timeZone plus a day of grace has passed) is computed once, stored in the state store,
//   and that copy is served from then on.
//
// Must never: truncate an export without saying so, hold a whole CSV range in memory, recompute a
// closed month's statement once stored, or answer bad input with anything but the envelope.
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseTime } from '../admin/admin-routes.ts';
import { type AdminRight, authorizeAdmin } from '../auth/admin-roles.ts';
import { localDates } from '../cost/budget-periods.ts';
import { CSV_HEADER, csvLine, isTimeZone, ZonedTime } from '../cost/spend-ledger.ts';
import { checkInn } from '../domain/requests.ts';
import { ApiError } from '../errors.ts';
import { jsonArrayInTurns, jsonWithArrays } from '../json-in-turns.ts';
import { PRICE_KINDS } from '../metrics/gateway-metrics.ts';
import { SAVING_REASONS } from '../metrics/metric-catalogue.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import type { FinanceStore } from './finance-store.ts';
import { GLOBAL_SCOPE } from './finance-store.ts';
import { MONTH_APP_PREFIX, type SavingsRecord, savingsKey, servedKey, unpaidKey } from './savings-record.ts';
import {
  buildStatement,
  type CapInForce,
  ChargeTally,
  monthBounds,
  monthState,
  type Statement,
  type StatementInput,
  showIn,
  statementCsv,
} from './statements.ts';

export const LEDGER_PAGE_DEFAULT = 1000;
export const LEDGER_PAGE_MAX = 10_000;
/** A closed month's statement is kept this long in the state store (ten years). */
export const STATEMENT_TTL_MS = 3650 * 86_400_000;
export const statementKey = (month: string) => `statement:${month}`;

export interface StatementRoutesOptions {
  current: () => PipelineDeps;
  finance: FinanceStore;
  savings: SavingsRecord;
}

function formatOf(q: Record<string, string | undefined>): 'json' | 'csv' {
  const format = q.format ?? 'json';
  if (format !== 'json' && format !== 'csv') {
    throw ApiError.validation([
      { field: 'format', code: 'invalid_value', message: 'format must be json or csv' },
    ]);
  }
  return format;
}

function zoneOf(q: Record<string, string | undefined>, deps: PipelineDeps): string {
  const tz = q.tz === undefined || q.tz === '' ? deps.config.cost.timeZone : q.tz;
  if (!isTimeZone(tz)) {
    throw ApiError.validation([
      {
        field: 'tz',
        code: 'invalid_value',
        message: `tz must be an IANA time zone such as Europe/Moscow or UTC`,
      },
    ]);
  }
  return tz;
}

/** What a ledger cursor carries: the range, the app filter and the last record read. */
/** The kinds a ledger entry can have (the price kinds). */
const LEDGER_KINDS: readonly string[] = PRICE_KINDS;

interface LedgerCursor {
  after: string;
  from: number;
  to: number;
  app: string | null;
  kind: string | null;
  inn: string | null;
}

function encodeCursor(c: LedgerCursor): string {
  return Buffer.from(JSON.stringify([2, c.after, c.from, c.to, c.app, c.kind, c.inn])).toString('base64url');
}

function decodeCursor(text: string): LedgerCursor {
  const bad = () =>
    ApiError.validation([
      {
        field: 'cursor',
        code: 'invalid_value',
        message: 'cursor must be a next_cursor this endpoint returned',
      },
    ]);
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || !((v.length === 5 && v[0] === 1) || (v.length === 7 && v[0] === 2))) throw bad();
  const [, after, from, to, app, kind = null, inn = null] = v as [
    number,
    unknown,
    unknown,
    unknown,
    unknown,
    unknown?,
    unknown?,
  ];
  if ((kind !== null && typeof kind !== 'string') || (inn !== null && typeof inn !== 'string')) throw bad();
  if (
    typeof after !== 'string' ||
    !/^\d{1,16}-\d{1,16}$/.test(after) ||
    !Number.isSafeInteger(from) ||
    !Number.isSafeInteger(to) ||
    (app !== null && typeof app !== 'string')
  )
    throw bad();
  return {
    after,
    from: from as number,
    to: to as number,
    app: app as string | null,
    kind: kind as string | null,
    inn: inn as string | null,
  };
}

export function registerStatementRoutes(app: FastifyInstance, o: StatementRoutesOptions): void {
  const authorize = (request: FastifyRequest, right: AdminRight): PipelineDeps => {
    const deps = o.current();
    authorizeAdmin(request, deps.config.admin, right);
    return deps;
  };

  app.get('/admin/ledger', async (request, reply) => {
    const deps = authorize(request, 'read');
    const q = request.query as Record<string, string | undefined>;
    const format = formatOf(q);
    const tz = zoneOf(q, deps);
    const cursor = q.cursor !== undefined && q.cursor !== '' ? decodeCursor(q.cursor) : null;
    const to = cursor ? cursor.to : parseTime(q.to, 'to', deps.clock.now() + 1);
    const from = cursor ? cursor.from : parseTime(q.from, 'from', to - 31 * 86_400_000);
    const appName = cursor ? (cursor.app ?? undefined) : q.app;
    const kind = cursor ? (cursor.kind ?? undefined) : q.kind || undefined;
    const inn = cursor ? (cursor.inn ?? undefined) : q.inn || undefined;
    const problems = [
      ...(kind !== undefined && !LEDGER_KINDS.includes(kind)
        ? [
            {
              field: 'kind',
              code: 'invalid_value',
              message: `kind must be one of ${LEDGER_KINDS.join(', ')}`,
            },
          ]
        : []),
      ...(inn !== undefined ? checkInn(inn) : []),
    ];
    if (problems.length) throw ApiError.validation(problems);
    const filter = { app: appName, kind, inn };
    if (cursor && q.app !== undefined && q.app !== (cursor.app ?? '')) {
      throw ApiError.validation([
        { field: 'cursor', code: 'invalid_value', message: 'this cursor belongs to another app filter' },
      ]);
    }
    if (appName !== undefined && !deps.config.apps.some((a) => a.name === appName) && appName !== 'demo') {
      throw ApiError.validation([{ field: 'app', code: 'unknown_app', message: `no app named ${appName}` }]);
    }
    const zone = new ZonedTime(tz);
    if (format === 'csv') {
      if (q.limit !== undefined || cursor) {
        throw ApiError.validation([
          {
            field: q.limit !== undefined ? 'limit' : 'cursor',
            code: 'invalid_value',
            message: 'the CSV export streams the whole range; limit and cursor are for JSON pages',
          },
        ]);
      }
      const ledger = deps.ledger;
      const log = request.log;
      async function* lines(): AsyncGenerator<string> {
        yield CSV_HEADER;
        try {
          for await (const b of ledger.batches(from, to, filter)) {
            let chunk = '';
            for (const e of b.entries) chunk += csvLine(e, zone);
            if (chunk) yield chunk;
          }
        } catch (err) {
          // The header is out: the reply is cut short (no final chunk), never silently complete.
          log.error({ err: (err as Error)?.message }, 'ledger CSV export failed mid-stream');
          throw err;
        }
      }
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="cpgw-ledger.csv"')
        .send(Readable.from(lines(), { objectMode: false }));
    }
    const limit = q.limit === undefined ? LEDGER_PAGE_DEFAULT : Number(q.limit);
    if (!/^\d+$/.test(q.limit ?? '1') || limit < 1 || limit > LEDGER_PAGE_MAX) {
      throw ApiError.validation([
        {
          field: 'limit',
          code: 'invalid_value',
          message: `limit must be an integer from 1 to ${LEDGER_PAGE_MAX}`,
        },
      ]);
    }
    const page = await deps.ledger.page(from, to, { ...filter, afterId: cursor?.after ?? null, limit });
    const total = page.entries.reduce((sum, e) => sum + e.amountMinor, 0);
    // Charges whose outcome is not known yet: counted against budgets until reconciled.
    const pending = (await deps.store.pendingCharges())
      .filter(
        (p) =>
          (appName === undefined || p.app === appName) &&
          (kind === undefined || p.kind === kind) &&
          (inn === undefined || p.inn === inn),
      )
      .map((p) => ({
        time: zone.format(p.at),
        at_ms: p.at,
        app: p.app,
        operation: p.operation,
        kind: p.kind,
        inn: p.inn,
        estimate_minor: p.estimateMinor,
        idempotency_key: p.key,
        request_id: p.requestId,
        state: p.leaseUntil > deps.clock.now() ? 'in_flight' : 'unknown',
        reconcile_attempts: p.reconcileAttempts,
      }));
    const head = {
      from: zone.format(from),
      to: zone.format(to),
      time_zone: tz,
      // This page: count and total of its entries; complete: nothing of the range follows it.
      count: page.entries.length,
      total_minor: total,
      complete: page.complete,
      next_cursor:
        page.complete || page.lastId === null
          ? null
          : encodeCursor({
              after: page.lastId,
              from,
              to,
              app: appName ?? null,
              kind: kind ?? null,
              inn: inn ?? null,
            }),
    };
    // The entries are written 250 a turn of the event loop (a page may hold 10,000), as JSON text,
    // so the preSerialization hook's snake_case is applied there (json-in-turns.ts).
    const entries = await jsonArrayInTurns(page.entries, (e) => ({
      ...e,
      time: zone.format(e.at),
      at_ms: e.at,
    }));
    // Records and releases this replica holds for a store that was unreachable: `outbox`.
    const tail = { pending, outbox: deps.outbox.depth };
    return reply.type('application/json; charset=utf-8').send(jsonWithArrays(head, { entries }, tail));
  });

  app.get('/admin/statements/:month', async (request, reply) => {
    const deps = authorize(request, 'read');
    const q = request.query as Record<string, string | undefined>;
    const format = formatOf(q);
    const tz = zoneOf(q, deps);
    const { month } = request.params as { month: string };
    const zoneName = deps.config.cost.timeZone;
    const bounds = monthBounds(month, zoneName);
    if (!bounds) {
      throw ApiError.validation([
        {
          field: 'month',
          code: 'invalid_value',
          message: 'month must be YYYY-MM (a year from 2000, month 01-12)',
        },
      ]);
    }
    const now = deps.clock.now();
    const state = monthState(bounds, now);
    if (state === 'future') {
      throw new ApiError(
        'not_found',
        { month },
        `No statement for ${month} yet: the month has not begun in ${zoneName}`,
      );
    }
    let statement: Statement | null = null;
    if (state === 'closed') {
      const stored = await deps.store.get(statementKey(month));
      if (stored) statement = JSON.parse(stored) as Statement;
    }
    if (!statement) {
      statement = await computeStatement(deps, o, bounds, state, now);
      if (state === 'closed') {
        // The first replica to store it wins; every later request serves that copy.
        const body = JSON.stringify(statement);
        if (!(await deps.store.setIfAbsent(statementKey(month), body, STATEMENT_TTL_MS))) {
          const stored = await deps.store.get(statementKey(month));
          if (stored) statement = JSON.parse(stored) as Statement;
        }
      }
    }
    const shown = showIn(statement, tz);
    if (format === 'csv') {
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="cpgw-statement-${month}.csv"`)
        .send(statementCsv(shown));
    }
    return shown;
  });
}

/** Reads every input of a month's statement and builds it. */
async function computeStatement(
  deps: PipelineDeps,
  o: StatementRoutesOptions,
  bounds: NonNullable<ReturnType<typeof monthBounds>>,
  state: 'open' | 'closed',
  now: number,
): Promise<Statement> {
  const zoneName = deps.config.cost.timeZone;
  // This replica's own sums not yet flushed belong in the figures.
  await o.savings.flush();
  const charges = new ChargeTally();
  // One Intl lookup per local day rather than per second of time (a month of charges).
  const dayOf = localDates(zoneName);
  for await (const b of deps.ledger.batches(bounds.fromMs, bounds.toMs))
    for (const e of b.entries) charges.add(e, dayOf(e.at));

  const prefix = `${MONTH_APP_PREFIX}${bounds.month}:`;
  const marked = (await deps.store.keys(prefix, 10_000)).map((k) => k.slice(prefix.length));
  const configured = deps.config.apps.map((a) => a.name);
  const apps = [...new Set([...configured, ...charges.byApp.keys(), ...marked])].sort();

  const keys: string[] = [];
  for (const app of apps)
    for (const day of bounds.days) {
      keys.push(servedKey(app, day), unpaidKey(app, day));
      for (const kind of PRICE_KINDS)
        for (const reason of SAVING_REASONS) keys.push(savingsKey(app, kind, reason, day));
    }
  const counters = new Map<string, number>();
  for (let i = 0; i < keys.length; i += 2000) {
    for (const c of await deps.store.readCounters(keys.slice(i, i + 2000)))
      if (c.spentMinor !== 0) counters.set(c.key, c.spentMinor);
  }

  const overview = await deps.budgets.overview(configured);
  const caps = new Map<string, CapInForce[]>();
  for (const [scope, list] of Object.entries(overview)) {
    const figures = list.map((b) => ({
      period: b.period,
      limit_minor: b.limitMinor,
      soft_minor: b.softMinor,
      source: b.source,
      version: b.version,
    }));
    caps.set(scope === '*global*' ? GLOBAL_SCOPE : scope, figures);
  }

  const changes: StatementInput['changes'][number][] = [];
  for (const action of ['budget_set', 'budget_reset']) {
    let after: string | undefined;
    for (;;) {
      const page = await o.finance.readAudit({
        from: bounds.fromMs,
        to: bounds.toMs,
        action,
        limit: 1000,
        ...(after ? { after } : {}),
      });
      changes.push(...page.entries);
      if (!page.next) break;
      after = page.next;
    }
  }
  changes.sort((a, b) => a.at - b.at);

  return buildStatement({
    bounds,
    timeZone: zoneName,
    state,
    computedAtMs: now,
    apps,
    kinds: PRICE_KINDS,
    reasons: SAVING_REASONS,
    charges,
    counters,
    savingsKey,
    servedKey,
    unpaidKey,
    caps,
    changes,
    globalScope: GLOBAL_SCOPE,
  });
}
