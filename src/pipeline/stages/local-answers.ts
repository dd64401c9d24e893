// Stage: what the gateway answers by itself, without the upstream.
// - GET /v1/me: from the gateway's own copy of the upstream's account record (refreshed in the
//   background), plus a `gateway` object telling the app who it is to the gateway: its name,
//   scopes and budgets (limit, spent, remaining per period). `key.scopes` are the app's own; the
//   wallet and the upstream key's scopes only to an app with `read:account`. With no copy yet,
//   the price book reads it first; never passed through as the upstream wrote it.
// - GET /v1/openapi.json: `servers` names the gateway, never the upstream.
// - only-if-cached on a route the cache never stores: always a miss (RFC 9111 5.2.1.7), so 504
//   not_cached, and never an upstream call or a charge.
import { publicBase } from '../../checks/gateway-urls.ts';
import { snakeCaseKeys } from '../../json-case.ts';
import type { PipelineDeps } from '../deps.ts';
import { type Answer, isAnswer, servedWith } from '../outcome.ts';
import { refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

/** What this stage uses of PipelineDeps. */
export type LocalAnswersDeps = Pick<PipelineDeps, 'budgets' | 'clock' | 'config' | 'prices'>;

export const localAnswers: StageFactory<LocalAnswersDeps> = (deps) => async (ctx, next) => {
  if (ctx.route.name === 'me') {
    let { me } = deps.prices.snapshot();
    if (!me) {
      await deps.prices.refresh();
      me = deps.prices.snapshot().me;
    }
    let passed: Answer | null = null;
    if (!me) {
      // Still no copy: the upstream's own answer, shown to the app with the same filtering.
      const out = await next();
      if (!isAnswer(out) || out.status !== 200) return out;
      passed = out;
      try {
        me = JSON.parse(out.body.toString('utf8')) as typeof me;
      } catch {
        return refuse(
          'upstream_unavailable',
          { reason: 'bad_answer' },
          'The account record was not readable',
        );
      }
      if (!me) return out;
    }
    const app = ctx.app!;
    // Budgets live in the shared store; while it is unreachable /v1/me still answers, with
    // `budgets: null` (not known now), like the upstream's own "not yet known" nulls.
    const statuses = await deps.budgets.status(app.name).catch(() => null);
    // What an app is shown of its budgets (finance's fields stay in /admin/budgets).
    const budgets =
      statuses?.map(
        ({ scope, period, periodId, limitMinor, softMinor, spentMinor, reservedMinor, remainingMinor }) => ({
          scope,
          period,
          periodId,
          limitMinor,
          softMinor,
          spentMinor,
          reservedMinor,
          remainingMinor,
        }),
      ) ?? null;
    const age = Math.max(0, Math.floor((deps.clock.now() - deps.prices.snapshot().refreshedAt) / 1000));
    const account = app.scopes.includes('read:account');
    const upstreamKey = (me as { key?: Record<string, unknown> }).key;
    const body = {
      ...me,
      // The app's own rights (the upstream's names only), not the shared key's.
      key: {
        ...(upstreamKey ?? {}),
        scopes: account ? upstreamKey?.scopes : app.scopes.filter((s) => s !== 'read:account'),
      },
      ...(account ? {} : { wallet: null }),
      // The gateway's own object, in the one field-name case (json-case.ts).
      gateway: snakeCaseKeys({
        app: app.name,
        scopes: app.scopes,
        timeZone: deps.config.cost.timeZone,
        budgets,
      }),
    };
    const answer: Answer = {
      status: 200,
      headers: passed
        ? { ...passed.headers, 'content-type': 'application/json; charset=utf-8' }
        : { 'content-type': 'application/json; charset=utf-8', age: String(age) },
      body: Buffer.from(JSON.stringify(body)),
    };
    // The gateway's copy is a HIT; the upstream's own answer keeps what the stages below said.
    return passed ? servedWith(answer, passed) : { ...answer, cache: 'HIT' };
  }
  if (ctx.route.name === 'openapi') {
    const out = await next();
    if (!isAnswer(out) || out.status !== 200 || out.headers['content-encoding']) return out;
    try {
      const doc = JSON.parse(out.body.toString('utf8')) as Record<string, unknown>;
      doc.servers = [{ url: publicBase(deps.config, ctx.headers) }];
      return { ...out, body: Buffer.from(JSON.stringify(doc)) };
    } catch {
      return out;
    }
  }
  if (ctx.policy === null && ctx.directives.onlyIfCached) return refuse('not_cached');
  return next();
};
