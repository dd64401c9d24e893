// Free endpoints: GET /v1/me, banks, suggestions and search. They never charge; search
// spends the per-account search budget and the key budget, suggest only its own budget.
// /v1/me answers `wallet: null` / `prices: null` ("not yet known") while the modes say so.
import type { FastifyInstance } from 'fastify';
import { checkBic, checkKind, checkPage, checkQuery, type SearchKind } from '../domain/requests.ts';
import { ApiError } from '../errors.ts';
import { type EmulatorContext, json } from './emulator-context.ts';
import { defineRoute, spendKey } from './route-pipeline.ts';
import { isoMsk } from './time-format.ts';

export function registerLookupRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  defineRoute(
    app,
    ctx,
    { id: 'me', method: 'GET', url: '/v1/me', scope: null, spends: spendKey, idempotent: false },
    async (call) => {
      await call.faultGate();
      const { key } = call;
      return json(200, {
        account: { id: key.accountId, name: key.accountId === 1 ? 'ООО «Эмулятор»' : null },
        key: {
          name: key.name,
          environment: key.environment,
          scopes: key.scopes,
          expires_at: key.expiresAt === null ? null : isoMsk(key.expiresAt),
        },
        wallet: ctx.modes.walletKnown()
          ? (({ balance_minor, as_of }) => ({ balance_minor, as_of: isoMsk(as_of) }))(
              ctx.billing.shownWallet(key.accountId),
            )
          : null,
        prices: ctx.modes.pricesKnown() ? ctx.billing.shownPrices() : null,
      });
    },
  );

  defineRoute(
    app,
    ctx,
    {
      id: 'bank',
      method: 'GET',
      url: '/v1/banks/:bic',
      scope: 'read:companies',
      spends: spendKey,
      idempotent: false,
    },
    async (call) => {
      const { bic } = call.params as { bic: string };
      const problems = checkBic(bic);
      if (problems.length) throw ApiError.validation(problems);
      await call.faultGate();
      const bank = ctx.data.bank(bic);
      if (bank === null) throw new ApiError('not_found', { bic });
      return json(200, bank);
    },
  );

  defineRoute(
    app,
    ctx,
    {
      id: 'suggest',
      method: 'GET',
      url: '/v1/suggest',
      scope: 'read:companies',
      spends: (key) => [['suggest', String(key.accountId)]],
      idempotent: false,
    },
    async (call) => {
      const problems = checkQuery(call.query.q);
      if (problems.length) throw ApiError.validation(problems);
      await call.faultGate();
      return json(200, { items: ctx.data.suggest(call.query.q!).slice(0, 10) });
    },
  );

  defineRoute(
    app,
    ctx,
    {
      id: 'search',
      method: 'GET',
      url: '/v1/search',
      scope: 'read:companies',
      spends: (key) => [
        ['key', key.token],
        ['search', String(key.accountId)],
      ],
      idempotent: false,
    },
    async (call) => {
      const { q, kind, page } = call.query;
      const problems = [...checkQuery(q), ...checkKind(kind), ...checkPage(page)];
      if (problems.length) throw ApiError.validation(problems);
      await call.faultGate();
      return json(200, { data: ctx.data.search(q!, (kind ?? 'all') as SearchKind, page ? Number(page) : 1) });
    },
  );
}
