// Charged reads: dossier, sections, requisites and persons. Each validates first (422,
// free), answers 404 for an INN no register knows (free), then applies the coverage-window
// table: free inside a covering window, else one charge that opens or upgrades the window.
// X-Charged-Minor stands on every answer. The dossier path sends the memoized JSON as is.
import type { FastifyInstance } from 'fastify';
import { checkInn, isSectionName } from '../domain/requests.ts';
import { ApiError } from '../errors.ts';
import type { ReadKind } from './coverage-windows.ts';
import type { Answer, EmulatorContext } from './emulator-context.ts';
import { type Call, defineRoute, spendKey } from './route-pipeline.ts';

function validInn(inn: string): void {
  const problems = checkInn(inn);
  if (problems.length) throw ApiError.validation(problems);
}

/** Charges a company read unless a window covers it; returns X-Charged-Minor. */
export function chargeRead(ctx: EmulatorContext, call: Call, inn: string, read: ReadKind): number {
  const accountId = call.key.accountId;
  if (ctx.windows.covers(accountId, inn, read)) return 0;
  const price = ctx.billing.price(read);
  ctx.billing.charge(
    {
      accountId,
      keyName: call.key.name,
      inn,
      kind: read,
      idempotencyKey: call.idempotencyKey,
      requestId: call.requestId,
      route: call.req.routeOptions.config.routeId ?? '',
    },
    price,
  );
  ctx.windows.open(accountId, inn, read);
  return price;
}

/** UTF-8 bytes of the memoized dossier JSON, reused while the data layer returns the same string. */
function dossierBufferCache(): (inn: string, json: string) => Buffer {
  const dossierBytes = new Map<string, { json: string; bytes: Buffer }>();
  return (inn, json) => {
    const cached = dossierBytes.get(inn);
    if (cached && cached.json === json) return cached.bytes;
    const bytes = Buffer.from(json, 'utf8');
    dossierBytes.delete(inn);
    dossierBytes.set(inn, { json, bytes });
    if (dossierBytes.size > 256) dossierBytes.delete(dossierBytes.keys().next().value!);
    return bytes;
  };
}

function charged(body: string | Buffer, amount: number): Answer {
  return { status: 200, body, headers: { 'x-charged-minor': String(amount) } };
}

export function registerCompanyRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  const dossierBuffer = dossierBufferCache();
  const common = {
    method: 'GET',
    scope: 'read:companies',
    spends: spendKey,
    idempotent: true,
    charged: true,
  } as const;

  defineRoute(app, ctx, { ...common, id: 'company', url: '/v1/companies/:inn' }, async (call) => {
    const { inn } = call.params as { inn: string };
    validInn(inn);
    return call.idempotent(undefined, async () => {
      await call.faultGate();
      const body = ctx.data.dossierJson(inn);
      if (body === null) throw new ApiError('not_found', { inn });
      return charged(dossierBuffer(inn, body), chargeRead(ctx, call, inn, 'dossier'));
    });
  });

  defineRoute(app, ctx, { ...common, id: 'section', url: '/v1/companies/:inn/:section' }, async (call) => {
    const { inn, section } = call.params as { inn: string; section: string };
    validInn(inn);
    if (!isSectionName(section)) throw new ApiError('not_found', { section });
    const cursor = call.query.cursor || undefined;
    return call.idempotent(undefined, async () => {
      await call.faultGate();
      const answer = ctx.data.section(inn, section, cursor);
      if (answer === null) throw new ApiError('not_found', { inn });
      if (answer.kind === 'bad_cursor') {
        throw ApiError.validation([
          { field: 'cursor', code: 'invalid_value', message: 'cursor is not valid' },
        ]);
      }
      const body = ctx.modes.current.sectionDiffers === section ? differently(answer.body) : answer.body;
      return charged(JSON.stringify(body), chargeRead(ctx, call, inn, 'dossier'));
    });
  });

  defineRoute(app, ctx, { ...common, id: 'requisites', url: '/v1/requisites/:inn' }, async (call) => {
    const { inn } = call.params as { inn: string };
    validInn(inn);
    return call.idempotent(undefined, async () => {
      await call.faultGate();
      const record = ctx.data.requisites(inn);
      if (record === null) throw new ApiError('not_found', { inn });
      return charged(JSON.stringify(record), chargeRead(ctx, call, inn, 'requisites'));
    });
  });

  defineRoute(
    app,
    ctx,
    { ...common, id: 'person', url: '/v1/persons/:inn', scope: 'read:persons' },
    async (call) => {
      const { inn } = call.params as { inn: string };
      validInn(inn);
      return call.idempotent(undefined, async () => {
        await call.faultGate();
        const person = ctx.data.person(inn);
        if (person === null) throw new ApiError('not_found', { inn });
        const accountId = call.key.accountId;
        const quota = ctx.limiter.checkPerson(accountId, inn);
        if (!quota.ok) {
          throw new ApiError(
            quota.code,
            { limit: quota.limit },
            'Daily limit of distinct person INNs is used up',
            {
              headers: { 'retry-after': String(quota.retryAfter) },
            },
          );
        }
        const price = ctx.billing.price('person');
        ctx.billing.charge(
          {
            accountId,
            keyName: call.key.name,
            inn,
            kind: 'person',
            idempotencyKey: call.idempotencyKey,
            requestId: call.requestId,
            route: 'person',
          },
          price,
        );
        ctx.limiter.recordPerson(accountId, inn);
        return charged(JSON.stringify(person), price);
      });
    },
  );
}

/**
 * The section_differs mode: the same data in a shape the dossier's member does not have. An
 * array is answered as one page; a page or an object gains a field. Never equal to the input.
 */
function differently(body: unknown): unknown {
  if (Array.isArray(body)) return { items: body, cursor: '' };
  if (body !== null && typeof body === 'object') return { ...body, detail_level: 'full' };
  return { value: body, detail_level: 'full' };
}
