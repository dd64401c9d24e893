// Replicas that agree (issue 29): each replica writes a heartbeat to the shared store's state
// role every 10 s with a 30 s TTL (key `replica:<id>`: id, version, config hash, started, last
// seen), so GET /admin/replicas lists the live ones and an operator sees which replica runs which
// config; cpgw_config_info{hash} (server/wiring.ts, reload.ts) carries the same hash to
// Prometheus, where CpgwConfigDrift fires when live replicas differ.
//
// The config hash is a stable hash of the effective config without secrets: token hashes,
// anything named like a secret, password or API key, and the user:password part of any URL are
// left out, object keys are sorted, so two replicas with the same settings get the same hash
// whatever order their files list keys in.
//
// Must never: write a secret (or a hash of one) into a heartbeat, let a store fault stop the
// replica or reach a request, or keep the process alive (the timer is unref'd).
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Clock } from '../clock.ts';
import { getAll, type StateStore } from '../store/state-store.ts';

/** State keys of heartbeats (listed by GET /admin/replicas: an indexed prefix, state-store.ts). */
export const REPLICA_PREFIX = 'replica:';
export const HEARTBEAT_INTERVAL_MS = 10_000;
export const HEARTBEAT_TTL_MS = 30_000;
/** The longest a shutdown waits for the last write (taking this replica off the list). */
const STOP_WAIT_MS = 1000;

/** One heartbeat as stored and as GET /admin/replicas shows it. */
export interface ReplicaRecord {
  id: string;
  host: string;
  version: string;
  config_hash: string;
  /** ISO times. */
  started_at: string;
  last_seen_at: string;
}

/** The gateway's version (package.json). */
export const GATEWAY_VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
})();

const SECRET_KEY = /token|secret|password|passwd|apikey|api_key|credential/i;

/** The config as hashed: secrets out, URLs without user info, keys sorted. */
export function redactedConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactedConfig);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      if (SECRET_KEY.test(key)) continue;
      out[key] = redactedConfig((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  if (typeof value === 'string' && /^[a-z][a-z0-9+.-]*:\/\/[^/@]*@/i.test(value))
    return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
  return value;
}

/** A stable 16-hex-digit hash of the effective config without secrets. */
export function configHash(config: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(redactedConfig(config)))
    .digest('hex')
    .slice(0, 16);
}

export interface ReplicaHeartbeatOptions {
  store: Pick<StateStore, 'get' | 'set' | 'keys'>;
  clock: Clock;
  config: unknown;
  /** Default: host, pid and a random suffix (several replicas may share a process in tests). */
  id?: string;
  intervalMs?: number;
  ttlMs?: number;
  /** A failed write (logged by the caller once per streak); never throws. */
  onError?: (err: unknown) => void;
  /** A write succeeded after failures. */
  onRecovered?: () => void;
}

export class ReplicaHeartbeat {
  readonly id: string;
  private readonly startedAt: number;
  private hashValue: string;
  private timer: ReturnType<typeof setInterval> | null = null;
  private failing = false;
  private stopped = false;

  constructor(private readonly o: ReplicaHeartbeatOptions) {
    this.id = o.id ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.startedAt = o.clock.now();
    this.hashValue = configHash(o.config);
  }

  /** This replica's config hash now. */
  get hash(): string {
    return this.hashValue;
  }

  private get ttlMs(): number {
    return this.o.ttlMs ?? HEARTBEAT_TTL_MS;
  }

  /** A reload applied `config`: the next heartbeat (written now) carries its hash. */
  async setConfig(config: unknown): Promise<void> {
    this.hashValue = configHash(config);
    await this.beat();
  }

  /** Writes the first heartbeat and then one every interval. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.beat();
    if (this.stopped) return;
    this.timer = setInterval(() => void this.beat(), this.o.intervalMs ?? HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops beating and takes this replica off the list (its key lapses at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // The state role has no delete: a 1 ms TTL takes the key off the list now. A store that does
    // not answer within a second does not hold up the shutdown (the key lapses within the TTL).
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.o.store.set(this.key, JSON.stringify(this.record()), 1).catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, STOP_WAIT_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }

  private get key(): string {
    return `${REPLICA_PREFIX}${this.id}`;
  }

  private record(): ReplicaRecord {
    return {
      id: this.id,
      host: hostname(),
      version: GATEWAY_VERSION,
      config_hash: this.hashValue,
      started_at: new Date(this.startedAt).toISOString(),
      last_seen_at: new Date(this.o.clock.now()).toISOString(),
    };
  }

  /** One heartbeat write; never throws. */
  async beat(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.o.store.set(this.key, JSON.stringify(this.record()), this.ttlMs);
      if (this.failing) this.o.onRecovered?.();
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.o.onError?.(err);
      this.failing = true;
    }
  }

  /** The live replicas (a heartbeat not yet expired), oldest start first. */
  async list(): Promise<ReplicaRecord[]> {
    const keys = await this.o.store.keys(REPLICA_PREFIX);
    const values = await getAll(this.o.store, keys);
    // Liveness is the key's TTL in the store (never this replica's clock against another's).
    const out: ReplicaRecord[] = [];
    for (const v of values) {
      if (v === null) continue;
      let r: ReplicaRecord;
      try {
        r = JSON.parse(v) as ReplicaRecord;
      } catch {
        continue;
      }
      if (typeof r?.id !== 'string' || typeof r.config_hash !== 'string') continue;
      out.push(r);
    }
    return out.sort((a, b) => a.started_at.localeCompare(b.started_at) || a.id.localeCompare(b.id));
  }
}
