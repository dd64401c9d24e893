// The emulator's own control API under /_emulator/ (not part of the upstream): ledger,
// request log, faults, prices, wallet, clock, windows, webhook deliveries, modes and reset. Any
// valid key may call it (sandbox included); it spends no rate budget and is not logged.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.ts';
import { PRICE_KEYS, type PriceTable } from './emulator-config.ts';
import type { EmulatorContext } from './emulator-context.ts';
import { modeOptionsFromBody } from './emulator-modes.ts';
import { parseFault } from './fault-injector.ts';
import { isoMsk } from './time-format.ts';

function bad(message: string): ApiError {
  return ApiError.validation([{ field: 'body', code: 'invalid_value', message }]);
}

function body(req: FastifyRequest): Record<string, unknown> {
  const raw = req.body;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {}
  throw bad('body must be a JSON object');
}

export interface ControlHooks {
  advanceClock(ms: number): void;
  reset(): void;
}

export function registerControlRoutes(app: FastifyInstance, ctx: EmulatorContext, hooks: ControlHooks): void {
  app.register(
    async (control) => {
      control.addHook('onRequest', async (req) => {
        if (!ctx.keys.authenticate(req.headers.authorization, ctx.clock.now()))
          throw new ApiError('unauthorized');
      });

      control.get('/ledger', async () => ctx.billing.ledger());

      control.get('/requests', async (req) => {
        const route = (req.query as Record<string, unknown>).route;
        return ctx.requests.snapshot(typeof route === 'string' ? route : undefined);
      });

      control.get('/faults', async () => ({ faults: ctx.faults.list() }));
      control.post('/faults', async (req) => {
        const { fault, problems } = parseFault(body(req));
        if (!fault) throw bad(problems.join('; '));
        ctx.faults.add(fault);
        return { faults: ctx.faults.list() };
      });

      control.get('/prices', async () => ({
        charging: ctx.billing.chargingPrices,
        shown: ctx.billing.shownPrices(),
      }));
      control.post('/prices', async (req) => {
        const changes: Partial<PriceTable> = {};
        for (const [name, value] of Object.entries(body(req))) {
          if (!(PRICE_KEYS as readonly string[]).includes(name)) throw bad(`unknown price key ${name}`);
          if (value !== null && (!Number.isSafeInteger(value) || (value as number) < 0)) {
            throw bad(`${name} must be a non-negative integer or null`);
          }
          changes[name as keyof PriceTable] = value as number | null;
        }
        const charging = ctx.billing.changePrices(changes);
        return { charging, shown_in_me_from: isoMsk(ctx.clock.now() + ctx.config.priceLagMs) };
      });

      control.post('/wallet', async (req) => {
        const b = body(req);
        const accountId = b.account_id ?? 1;
        if (!Number.isSafeInteger(b.balance_minor) || (b.balance_minor as number) < 0) {
          throw bad('balance_minor must be a non-negative integer');
        }
        if (!Number.isSafeInteger(accountId)) throw bad('account_id must be an integer');
        ctx.billing.setBalance(accountId as number, b.balance_minor as number);
        return { account_id: accountId, balance_minor: b.balance_minor };
      });

      const clockState = () => ({
        now: isoMsk(ctx.clock.now()),
        now_ms: ctx.clock.now(),
        offset_ms: ctx.clock.offset,
      });
      control.get('/clock', async () => clockState());
      control.post('/clock', async (req) => {
        const advance = body(req).advance_ms;
        if (typeof advance !== 'number' || !Number.isFinite(advance) || advance < 0) {
          throw bad('advance_ms must be a non-negative number');
        }
        hooks.advanceClock(advance);
        return clockState();
      });

      control.get('/modes', async () => ctx.modes.snapshot());
      control.post('/modes', async (req) => {
        const problems: string[] = [];
        const options = modeOptionsFromBody(body(req), problems);
        if (problems.length) throw bad(problems.join('; '));
        try {
          ctx.modes.change(options);
        } catch (error) {
          throw bad((error as Error).message);
        }
        return ctx.modes.snapshot();
      });

      control.get('/windows', async () => ({ windows: ctx.windows.list() }));
      control.get('/webhooks', async () => ({ deliveries: ctx.webhooks.deliveries() }));
      // The subscribed address and its secrets (the cabinet's settings; two secrets: a rotation).
      control.post('/webhooks/target', async (req) => {
        const b = body(req);
        const url = b.url;
        if (url !== null && (typeof url !== 'string' || !URL.canParse(url)))
          throw bad('url must be a URL or null');
        const secrets = b.secrets;
        if (
          secrets !== undefined &&
          (!Array.isArray(secrets) ||
            secrets.length === 0 ||
            secrets.some((x) => typeof x !== 'string' || !x))
        )
          throw bad('secrets must be a non-empty array of non-empty strings');
        ctx.webhooks.retarget(url as string | null, secrets as string[] | undefined);
        return { url, secrets: secrets?.length ?? null };
      });

      control.post('/reset', async () => {
        hooks.reset();
        return { ok: true };
      });
    },
    { prefix: '/_emulator' },
  );
}
