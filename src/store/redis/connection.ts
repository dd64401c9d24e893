// ioredis connections for the Redis store, configured to fail fast and heal by themselves: once
// connected, a command on a dead link fails at once (no offline queue) or within commandTimeout
// with StoreUnavailableError, while the client keeps reconnecting in the background with a short
// capped backoff (RECONNECT_CAP_MS), so it is back within about half a second of Redis's return.
//
// A Redis Cluster (startup nodes instead of a URL) gets an ioredis Cluster with the same
// behaviour: keys.ts keeps every script's keys in one slot, and during a failover commands fail
// fast (StoreUnavailableError) until the cluster has promoted a replica and the client has
// refreshed its slot map.
//
// Must never: let a command wait forever, queue commands while disconnected (after the first
// connection), crash the process on an 'error' event, or report the same outage once per
// reconnect attempt.
import { Cluster, Redis, type RedisOptions, ReplyError } from 'ioredis';
import { StoreUnavailableError } from '../store.ts';

/** One Redis server or a Redis Cluster: every role speaks to either through the same commands. */
export type RedisClient = Redis | Cluster;

/** Where the store's data lives: one server (url) or a cluster (its startup nodes, host:port). */
export type RedisTarget = { url: string } | { clusterNodes: string[] };

export interface ConnectionOptions {
  /** Time allowed to open a connection. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** A command not answered within this fails with StoreUnavailableError. Default 2000 ms. */
  commandTimeoutMs?: number;
}

/** Redis replies that mean "not now" rather than "wrong command". */
const TRANSIENT_REPLY = /^(LOADING|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|BUSY)\b/;

export function openClient(
  target: RedisTarget,
  options: ConnectionOptions,
  onError: (error: unknown) => void,
): RedisClient {
  const redisOptions: RedisOptions = {
    connectTimeout: options.connectTimeoutMs ?? 2000,
    commandTimeout: options.commandTimeoutMs ?? 2000,
    maxRetriesPerRequest: 1,
  };
  if ('clusterNodes' in target) {
    const cluster = new Cluster(target.clusterNodes.map(parseNode), {
      redisOptions,
      // Queue only until the first connection (watchClient turns it off once ready).
      enableOfflineQueue: true,
      clusterRetryStrategy: reconnectDelay,
      // MOVED/ASK/TRYAGAIN/CLUSTERDOWN: follow a few redirections, briefly, then fail fast.
      maxRedirections: 4,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      slotsRefreshTimeout: options.connectTimeoutMs ?? 2000,
      scaleReads: 'master',
    });
    return watchClient(cluster, onError);
  }
  // Queue only until the first connection (watchClient turns it off once ready).
  const single = new Redis(target.url, {
    ...redisOptions,
    enableOfflineQueue: true,
    retryStrategy: reconnectDelay,
  });
  return watchClient(single, onError);
}

/** "host:port" (or "[v6]:port") as an ioredis cluster startup node. */
export function parseNode(node: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(node.trim());
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65535)
    throw new RangeError(`Redis cluster node must be host:port, got "${node}"`);
  return { host: match[1]!, port };
}

/** The servers holding data: every master of a cluster, or the one server (SCAN runs on each). */
export function dataNodes(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/** Longest wait between reconnect attempts: recovery comes at most this long after Redis is back. */
export const RECONNECT_CAP_MS = 400;

/** ioredis retryStrategy: 50, 100, 150 ... ms, capped; never gives up. */
export function reconnectDelay(times: number): number {
  return Math.min(50 * times, RECONNECT_CAP_MS);
}

/**
 * Reports the first error of each outage and (unless `keepQueue`: a subscriber connection that
 * must re-subscribe) stops offline queueing once connected.
 */
export function watchClient<C extends RedisClient>(
  client: C,
  onError: (error: unknown) => void,
  keepQueue = false,
): C {
  let healthy = true;
  client.on('ready', () => {
    healthy = true;
    if (!keepQueue) client.options.enableOfflineQueue = false;
  });
  client.on('error', (error: Error) => {
    if (healthy) onError(new StoreUnavailableError(`Redis connection: ${error.message}`, { cause: error }));
    healthy = false;
  });
  return client;
}

/** Calls `then` each time the client is ready again after having lost its connection. */
export function onReconnect(client: RedisClient, then: () => void): void {
  let lost = false;
  client.on('close', () => {
    lost = true;
  });
  client.on('ready', () => {
    if (lost) then();
    lost = false;
  });
}

export function isNoScript(error: unknown): boolean {
  return error instanceof ReplyError && String((error as Error).message).startsWith('NOSCRIPT');
}

/** Connection trouble becomes StoreUnavailableError; programming errors and bad replies pass through. */
export function toStoreError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError || error instanceof TypeError || error instanceof RangeError) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof ReplyError && !TRANSIENT_REPLY.test(message)) return error;
  return new StoreUnavailableError(`Redis unavailable: ${message}`, { cause: error });
}

export async function quit(client: RedisClient): Promise<void> {
  if (client.status === 'end') return;
  try {
    await Promise.race([client.quit(), new Promise((r) => setTimeout(r, 1000).unref())]);
  } catch {
    // quitting a dead connection fails; disconnect below is what matters
  }
  client.disconnect();
}
