// Starts the wired parts once the server is ready (fastify's onReady) and stops them on close(),
// in the order each needs: the money clock and budget overrides before prices and check events;
// on close, in-flight work is let finish before the governor refuses whoever still waits, and
// money operations the store did not take are flushed or kept in the state directory.
//
// Must never: start a part before onReady (a server built but never made ready starts nothing),
// or let a subscription that failed stop the server from starting (it logs and goes on).
import type { FastifyInstance } from 'fastify';
import { PRICES_CHANNEL, parseLearnedPrice } from '../cost/price-book.ts';
import { BUDGETS_CHANNEL } from '../finance/budget-overrides.ts';
import type { Wiring } from './wiring.ts';

export function registerLifecycle(app: FastifyInstance, wiring: Wiring): void {
  const { pipeline, checkEvents, heartbeat, savings, finance } = wiring;
  const { store, logger, config } = pipeline;
  let unsubscribePrices: (() => Promise<void>) | null = null;
  let unsubscribeBudgets: (() => Promise<void>) | null = null;
  app.addHook('onReady', async () => {
    await pipeline.moneyClock.start();
    // A budget change on any replica is announced here; the reserve path checks the version too.
    unsubscribeBudgets = await store
      .subscribe(BUDGETS_CHANNEL, () => void pipeline.overrides.invalidate())
      .catch((err: unknown) => {
        logger.warn(
          { err: (err as Error)?.message },
          'budget changes not subscribed; the version check still applies',
        );
        return null;
      });
    await pipeline.overrides.fresh();
    pipeline.overrides.start();
    unsubscribePrices = await store
      .subscribe(PRICES_CHANNEL, (message) => {
        const learned = parseLearnedPrice(message);
        if (learned) pipeline.prices.learn(learned, false);
      })
      .catch((err: unknown) => {
        logger.warn({ err: (err as Error)?.message }, 'cannot hear prices learned by other replicas');
        return null;
      });
    await pipeline.prices.start();
    await checkEvents.start();
    const replayed = await pipeline.outbox.loadSaved();
    if (replayed > 0) logger.warn({ operations: replayed }, 'replaying money operations a previous run left');
    pipeline.reconciler.start();
    await heartbeat.start();
    savings.start();
  });
  app.addHook('onClose', async () => {
    await heartbeat.stop();
    pipeline.moneyClock.stop();
    await unsubscribeBudgets?.().catch(() => {});
    await pipeline.overrides.stop();
    pipeline.prices.stop();
    await unsubscribePrices?.().catch(() => undefined);
    await checkEvents.close();
    await pipeline.coalescer.idle();
    await pipeline.coalescer.close();
    await pipeline.cache.packed();
    await pipeline.reconciler.close();
    // After in-flight requests: anyone still queued is refused (reason "shutdown").
    await pipeline.upstream.governor.close();
    // Money operations still waiting for the store: flushed, or kept in the state directory.
    const left = await pipeline.outbox.close(Math.min(5_000, config.server.shutdownGraceMs));
    if (!left.flushed)
      logger.error(
        { savedTo: left.savedTo },
        'store unreachable at shutdown; money operations kept for the next start',
      );
    await savings.close();
    if (wiring.ownsFinance) await finance.close();
  });
}
