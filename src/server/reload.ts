// Reload: one generation per configuration. A generation is the config, the budget guard and
// charge book built on its caps, and the stage chain over them; every other part is wired once
// (wiring.ts) and kept. A request reads the generation in force once and runs to its end on it.
// reload() reads the config again, builds and checks the next generation, then applies it with
// nothing left to fail: governor limits, cache ages, metric series, the live policy, the
// heartbeat's config hash (docs/architecture.md "Reload").
//
// Must never: apply part of a configuration that fails (every check runs before the first
// change), rebuild a stateful part (store, governor, money, cache, prices keep their state), or
// apply a setting that needs a restart (those are named in ReloadResult.restartNeeded).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { resolveCacheConfig } from '../cache/index.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { type AuditTrail, changedConfigKeys } from '../finance/audit-trail.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';
import { makePipeline } from '../pipeline/index.ts';
import type { UpstreamRoute } from '../route-table.ts';
import { budgetGuard, governorApps, type WiredPipeline } from './pipeline-wiring.ts';
import type { Wiring } from './wiring.ts';

/** What a reload applied: the apps now configured, and changed settings that need a restart. */
export interface ReloadResult {
  apps: string[];
  restartNeeded: string[];
}

type RouteHandler = ReturnType<ReturnType<typeof makePipeline>>;

/** The gateway as the routes and the admin API see it: the generation in force, and reload. */
export interface LiveGateway {
  /** The deps of the generation in force (read once per request). */
  current: () => PipelineDeps;
  /** The route's handler in the generation in force (built on first use). */
  handlerFor: (route: UpstreamRoute) => RouteHandler;
  /**
   * Re-reads the config, validates and builds everything it needs, then swaps. Throws ConfigError
   * (every problem) or RangeError and keeps the running config.
   */
  reload: () => ReloadResult;
}

const reloaders = new WeakMap<FastifyInstance, () => ReloadResult>();

/** Reloads a gateway built by buildServer (SIGHUP); recorded in the audit trail. */
export function reloadGateway(app: FastifyInstance): ReloadResult {
  const reload = reloaders.get(app);
  if (!reload) throw new Error('this gateway was built without a config loader; it cannot reload');
  return reload();
}

export function liveGateway(wiring: Wiring, loadConfig: (() => GatewayConfig) | undefined): LiveGateway {
  const { pipeline, metrics, heartbeat } = wiring;
  const started = pipeline.config;
  // The reload seam: one generation (config + what is derived from it alone) read once per
  // request; a reload builds and checks the next, then swaps it in one assignment.
  let live = generation(pipeline);
  const reload = (): ReloadResult => {
    if (!loadConfig) throw new Error('this gateway was built without a config loader');
    const next = loadConfig();
    const nextDeps = reconfigured(live.deps, next, pipeline);
    // Everything below was checked (schema, governor limits) before anything changes.
    const { expectedReplicas: _replicas, ...classes } = next.limits;
    pipeline.upstream.governor.reconfigure({ classes, apps: governorApps(next) });
    pipeline.cache.reconfigure(resolveCacheConfig(next.cache));
    metrics.addApps(next.apps.map((a) => a.name));
    metrics.m.walletLowBalanceHorizon.set(next.finance.lowBalanceDays * 86_400);
    live = generation(nextDeps);
    pipeline.policy.config = next;
    pipeline.policy.budgets = nextDeps.budgets;
    const previousHash = heartbeat.hash;
    void heartbeat.setConfig(next);
    if (heartbeat.hash !== previousHash) {
      metrics.m.configInfo.remove({ hash: previousHash });
      metrics.m.configInfo.set({ hash: heartbeat.hash }, 1);
    }
    return { apps: next.apps.map((a) => a.name), restartNeeded: restartNeeded(started, next) };
  };
  return { current: () => live.deps, handlerFor: (route) => live.handlerFor(route), reload };
}

/** A reload by signal (SIGHUP, reloadGateway) is recorded too, with the changed keys and "SIGHUP" as the actor. */
export function reloadBySignal(app: FastifyInstance, gateway: LiveGateway, trail: AuditTrail): void {
  reloaders.set(app, () => {
    const before = gateway.current().config;
    const result = gateway.reload();
    void trail.append(
      trail.entry(
        { name: 'SIGHUP', role: 'admin' },
        { id: randomUUID(), ip: 'local', headers: {} },
        {
          action: 'reload',
          target: 'config',
          before: null,
          after: {
            changed_keys: changedConfigKeys(before, gateway.current().config),
            apps: result.apps,
            restart_needed: result.restartNeeded,
          },
        },
      ),
    );
    return result;
  });
}

/** One configuration's pipeline: its deps and a handler per route (built on first use). */
function generation(deps: PipelineDeps) {
  const make = makePipeline(deps);
  const handlers = new Map<string, RouteHandler>();
  return {
    deps,
    handlerFor(route: UpstreamRoute): RouteHandler {
      let handler = handlers.get(route.name);
      if (!handler) {
        handler = make(route);
        handlers.set(route.name, handler);
      }
      return handler;
    },
  };
}

/**
 * The deps of the next generation: the same stateful parts (store, governor, money, cache, prices)
 * with the new config and the budget guard built from it. Throws before anything is swapped.
 */
function reconfigured(prev: PipelineDeps, next: GatewayConfig, base: WiredPipeline): PipelineDeps {
  // The governor checks app limits again when applied; check them here so a bad one stops the
  // reload before any part is swapped.
  for (const a of next.apps)
    if (!(a.limits.weight > 0)) throw new RangeError(`apps.${a.name}.limits.weight must be > 0`);
  const budgets = budgetGuard(
    { config: next, store: prev.store, clock: prev.moneyClock },
    base.notices,
    base.overrides,
  );
  return { ...prev, config: next, budgets, charges: base.chargesFor(budgets) };
}

/** Settings of those sections that each request reads from the live config (the /metrics door). */
const APPLIED_LIVE = new Set(['metrics.onMainPort', 'metrics.tokenHash']);

/** Settings a reload does not apply (listener, store, upstream, money timing): named so the operator restarts. */
function restartNeeded(running: GatewayConfig, next: GatewayConfig): string[] {
  const sections = ['server', 'upstream', 'store', 'log', 'cost', 'metrics', 'notices'] as const;
  const out: string[] = [];
  for (const section of sections) {
    const a = running[section] as Record<string, unknown>;
    const b = next[section] as Record<string, unknown>;
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      if (JSON.stringify(a[key]) !== JSON.stringify(b[key]) && !APPLIED_LIVE.has(`${section}.${key}`))
        out.push(`${section}.${key}`);
  }
  if (next.limits.expectedReplicas !== running.limits.expectedReplicas) out.push('limits.expectedReplicas');
  return out;
}
