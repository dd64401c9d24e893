// Checks and webhooks wired together for one gateway replica (README "Checks and webhooks"):
// the upstream's webhook ingress (POST webhooks.path: signature verified, event stored, 2xx,
// then processed), the persistent delivery queue to apps, and the gateway's own polls of checks
// no webhook finished. Timers run on the injected clock; buildServer() starts and stops them.
// Both finish checks through CheckCompletion, as the check stage does with its own (built from
// the pipeline's deps, it queues without this worker's handle: pipeline/stages/checks.ts).
//
// Must never: answer 2xx to an event it did not verify and store, or log a secret.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { GatewayConfig, WebhookSecrets } from '../config/schema.ts';
import { ApiError, sendError } from '../errors.ts';
import type { WebhookEventResult } from '../metrics/metric-catalogue.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import { asCheckEvent, CheckCompletion } from './check-completion.ts';
import { CheckPoller } from './check-poller.ts';
import { publicBase } from './gateway-urls.ts';
import { WebhookDeliveries } from './webhook-deliveries.ts';
import { WebhookIntake } from './webhook-intake.ts';
import { verifySignature } from './webhook-signature.ts';

export interface CheckEvents {
  deliveries: WebhookDeliveries;
  intake: WebhookIntake;
  poller: CheckPoller;
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createCheckEvents(
  deps: PipelineDeps,
  secrets: WebhookSecrets,
  replicaId: string,
  /** The configuration in force (a reload swaps it): whose webhooks a finished check goes to. */
  live: () => GatewayConfig = () => deps.config,
): CheckEvents {
  const { config, store, clock, logger, metrics } = deps;
  const deliveries = new WebhookDeliveries({
    store,
    clock,
    secrets: secrets.apps,
    timeoutMs: config.webhooks.deliveryTimeoutMs,
    retryDelaysMs: config.webhooks.retryDelaysMs,
    intervalMs: config.webhooks.workerIntervalMs,
    replicaId,
    onResult: (app, result) => {
      metrics.webhookDelivery(app, result);
      if (result !== 'delivered') logger.warn({ app, result }, 'webhook delivery to app not accepted');
    },
    onError: (err) => logger.warn({ err: (err as Error)?.message ?? String(err) }, 'webhook delivery fault'),
  });
  const completion = new CheckCompletion({
    // Read at each completion: an app a reload added, or a webhook URL it changed, is used at
    // once (the timers' own settings above need a restart).
    get config() {
      return live();
    },
    store,
    clock,
    cache: deps.cache,
    windows: deps.windows,
    tickets: deps.tickets,
    deliveries,
  });
  const intake = new WebhookIntake({
    store,
    clock,
    completion,
    replicaId,
    onError: (err, eventId) =>
      logger.warn(
        { err: (err as Error)?.message ?? String(err), eventId },
        'webhook event processing failed',
      ),
  });
  const poller = new CheckPoller({
    store,
    clock,
    tickets: deps.tickets,
    upstream: deps.upstream,
    completion,
    replicaId,
    // Expecting the upstream's event: give it time before polling; without secrets poll at once.
    graceMs: secrets.upstream.length > 0 ? config.webhooks.pollGraceMs : 0,
    timeoutMs: config.upstream.timeoutMs,
    onError: (err) => logger.warn({ err: (err as Error)?.message ?? String(err) }, 'check poll failed'),
  });
  const stop = new AbortController();
  let pollLoop: Promise<void> | null = null;
  return {
    deliveries,
    intake,
    poller,
    async start() {
      const recovered = await intake.recover().catch(() => 0);
      if (recovered > 0) logger.warn({ events: recovered }, 'processed webhook events a previous run left');
      deliveries.start();
      pollLoop = (async () => {
        while (!stop.signal.aborted) {
          await poller.pollDue().catch(() => 0);
          await clock.sleep(config.webhooks.workerIntervalMs, stop.signal);
        }
      })();
    },
    async close() {
      stop.abort();
      await pollLoop;
      await deliveries.close();
    },
  };
}

const WEBHOOK_BODY_LIMIT = 8 * 1024 * 1024;

/** POST webhooks.path: the upstream's deliveries. */
export function registerWebhookIngress(
  app: FastifyInstance,
  deps: PipelineDeps,
  events: CheckEvents,
  secrets: WebhookSecrets,
): void {
  const count = (result: WebhookEventResult) => deps.metrics.webhookEvent(result);
  const refuse = (
    reply: FastifyReply,
    status: number,
    code: 'unauthorized' | 'validation_failed',
    message: string,
  ) => sendError(reply, new ApiError(code, {}, message, { status }));
  // An event carries a whole dossier (~100 KB): above the /v1 body limit.
  app.post(deps.config.webhooks.path, { bodyLimit: WEBHOOK_BODY_LIMIT }, async (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const header = request.headers['x-service-signature'];
    const verdict = verifySignature({
      header: Array.isArray(header) ? header.join(',') : header,
      body,
      secrets: secrets.upstream,
      nowMs: deps.clock.now(),
    });
    if (!verdict.ok) {
      count(verdict.reason === 'stale' ? 'stale' : 'bad_signature');
      request.log.warn({ reason: verdict.reason }, 'webhook refused');
      return verdict.reason === 'stale'
        ? refuse(reply, 400, 'validation_failed', 'Signature timestamp is outside the 300 s tolerance')
        : refuse(reply, 401, 'unauthorized', 'Signature not accepted');
    }
    let event: ReturnType<typeof asCheckEvent> = null;
    try {
      event = asCheckEvent(JSON.parse(body.toString('utf8')));
    } catch {
      event = null;
    }
    if (!event) {
      count('malformed');
      return refuse(
        reply,
        400,
        'validation_failed',
        'Not an event envelope (id, event, data.check_id, data.inn)',
      );
    }
    let result: 'accepted' | 'duplicate';
    try {
      result = await events.intake.receive(event, body, publicBase(deps.config, request.headers));
    } catch (err) {
      // Not stored, not acknowledged: the upstream repeats the delivery.
      count('store_error');
      throw err;
    }
    count(result);
    if (result === 'accepted') {
      // The work after the answer: the event is stored, so nothing is lost if this dies.
      reply.raw.once('close', () => void events.intake.process(event.id));
    }
    return reply.code(200).send({ received: true, duplicate: result === 'duplicate' });
  });
}
