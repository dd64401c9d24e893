// POST /v1/check and GET /v1/checks/{uuid}. A check is charged at creation (check price, or
// requisites price for purpose requisites), then waits up to the check wait for its data:
// 200 with the data, else 202 with a ticket and Retry-After. Cold checks spend the
// per-account cold-check budget. Polling is free and never changes state.
import type { FastifyInstance } from 'fastify';
import { checkCheckBody } from '../domain/requests.ts';
import { ApiError } from '../errors.ts';
import { type Answer, type EmulatorContext, json } from './emulator-context.ts';
import { defineRoute, spendKey } from './route-pipeline.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function parseBody(raw: unknown): unknown {
  if (typeof raw !== 'string' || raw.trim() === '') return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

export function registerCheckRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  defineRoute(
    app,
    ctx,
    {
      id: 'check',
      method: 'POST',
      url: '/v1/check',
      scope: 'read:checks',
      spends: spendKey,
      idempotent: true,
      charged: true,
    },
    async (call) => {
      const parsed = parseBody(call.req.body);
      const { value, problems } = checkCheckBody(parsed);
      if (!value) throw ApiError.validation(problems);
      return call.idempotent(parsed, async (): Promise<Answer> => {
        await call.faultGate();
        const accountId = call.key.accountId;
        const kind = value.purpose === 'requisites' ? 'requisites' : 'check';
        const price = ctx.billing.price(kind);
        if (ctx.checks.isCold(value.inn, value.purpose)) {
          const balance = ctx.billing.balance(accountId);
          if (balance < price) {
            throw new ApiError('insufficient_funds', { balance_minor: balance, price_minor: price });
          }
          const decision = ctx.limiter.take([['cold_check', String(accountId)]]);
          if (!decision.ok) {
            throw new ApiError(
              'rate_limited',
              { limit: decision.limit },
              'No more than two cold checks a minute',
              {
                headers: { 'retry-after': String(decision.retryAfter) },
              },
            );
          }
        }
        const entry = ctx.billing.charge(
          {
            accountId,
            keyName: call.key.name,
            inn: value.inn,
            kind,
            idempotencyKey: call.idempotencyKey,
            requestId: call.requestId,
            route: 'check',
          },
          price,
        );
        const record = ctx.checks.create(accountId, value.inn, value.purpose);
        entry.check_id = record.id;
        const charged = { 'x-charged-minor': String(price) };
        if ((await ctx.checks.wait(record)) === 'ready')
          return { status: 200, body: record.result!, headers: charged };
        return json(202, ctx.checks.ticket(record), {
          ...charged,
          'retry-after': String(ctx.checks.retryAfter(record)),
        });
      });
    },
  );

  defineRoute(
    app,
    ctx,
    {
      id: 'check_poll',
      method: 'GET',
      url: '/v1/checks/:uuid',
      scope: 'read:checks',
      spends: spendKey,
      idempotent: false,
      charged: true,
    },
    async (call) => {
      const { uuid } = call.params as { uuid: string };
      const record = UUID.test(uuid) ? ctx.checks.get(call.key.accountId, uuid.toLowerCase()) : null;
      if (!record) throw new ApiError('not_found', { check_id: uuid });
      await call.faultGate();
      if (record.result !== null)
        return { status: 200, body: record.result, headers: { 'x-charged-minor': '0' } };
      return json(202, ctx.checks.ticket(record), {
        'x-charged-minor': '0',
        'retry-after': String(ctx.checks.retryAfter(record)),
      });
    },
  );
}
