// The response cache the request pipeline calls: look up before spending anything, save what
// the upstream answered, stand in with a stale entry when the upstream fails, and render an
// entry as an HTTP answer (compressed passthrough when the client accepts the stored coding).
// Keys, freshness rules, the codec and compression live in their own modules; this one wires
// them to the Store and the injected clock.
//
// The cache is shared by every app (one account pays for everything); scope and check
// ownership are checked by the pipeline BEFORE lookup.
//
// Must never: throw from lookup/save/onUpstreamError/render on a store fault (a fault is a
// miss, reported through onError), read Date.now(), store an answer the client sent no-store
// for, or replace a good (200) entry with an error or a negative answer.
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import { type RouteName, routeSpec } from '../route-table.ts';
import type { CacheStore } from '../store/store.ts';
import { type CacheConfig, type CacheKind, maxAgeFor, storageTtlMs } from './cache-config.ts';
import { NO_DIRECTIVES, type RequestDirectives } from './cache-control.ts';
import { type CacheEntry, decodeEntry, encodeEntry, HEADER_BYTES, selectHeaders } from './cache-entry.ts';
import { type CachePolicy, cachePolicy, innTag, routeTag, storableKind } from './cache-keys.ts';
import { CacheCounters, type CacheStats } from './cache-stats.ts';
import { gzipOf, identityOf } from './coding-variants.ts';
import { acceptsCoding, type BodyEncoding, compressBody, SYNC_LIMIT } from './content-coding.ts';
import { decide, type FetchReason, usableOnError } from './freshness.ts';

/** How many keys' last compressed copies are kept for a store of the same body again. */
const LAST_PACKED_KEYS = 64;

/** gzip level of the copy kept for gzip-only clients of a brotli entry (made once per entry). */
const GZIP_VARIANT_LEVEL = 6;

export interface CacheRequest {
  route: RouteName;
  params: Readonly<Record<string, string | undefined>>;
  query: Readonly<Record<string, unknown>>;
  /**
   * The request's policy when the caller holds it (the pipeline's ctx.policy, computed once per
   * request in stages/validate.ts); absent: computed here from route, params and query.
   */
  policy?: CachePolicy | null;
  /** App name (per-app max ages); null on public routes. */
  app: string | null;
  directives: RequestDirectives;
  /** A coverage window for this INN is open: an upstream read of this route would cost 0. */
  windowOpen?: boolean;
  /**
   * windowOpen still being read (the cache stage reads the windows while it looks up): awaited
   * only when an entry is found (with none, the window changes nothing here).
   */
  windowOpenLater?: Promise<boolean>;
  /** The INN the answer is about when the route does not say (check results); else taken from the route or body. */
  inn?: string;
}

/** What names a request's entry: its route, params and query, or the policy already computed. */
type KeyedRequest = Pick<CacheRequest, 'route' | 'params' | 'query' | 'policy'>;

export type Lookup =
  | { action: 'serve'; entry: CacheEntry; age: number; status: 'HIT' | 'STALE' }
  | { action: 'fetch'; reason: FetchReason; staleEntry?: CacheEntry }
  | { action: 'not_cached' }
  | { action: 'bypass' };

export type CacheStatusHeader = 'HIT' | 'MISS' | 'STALE' | 'COALESCED' | 'BYPASS';

export interface UpstreamAnswer {
  status: number;
  headers: Readonly<Record<string, string | undefined>>;
  body: Buffer;
}

export interface RenderedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** True while a better coding for this client is being made (identity sent meanwhile). */
  provisional?: true;
}

/** A store whose in-process tier can be read synchronously (memory store; Redis with a local tier). */
export type PeekableCacheStore = CacheStore & { cachePeek?(key: string): Buffer | null };

export interface ResponseCacheOptions {
  store: PeekableCacheStore;
  clock: Clock;
  config: CacheConfig;
  /** Store faults and undecodable entries; the request goes on as a miss. Default: ignored. */
  onError?: (error: unknown, context: { op: string; key: string }) => void;
}

export class ResponseCache {
  private readonly store: PeekableCacheStore;
  /** Decoded entries by their stored bytes: decoded once, gone when the store drops the bytes. */
  private readonly decoded = new WeakMap<Buffer, CacheEntry>();
  /** Compressions running after their entry was stored uncompressed. */
  private readonly packing = new Set<Promise<void>>();
  /**
   * Per key (the last LAST_PACKED_KEYS keys stored), the last body compressed and its copy
   * under the compression config of then: storing the same body again costs a comparison, not
   * a compression (brotli 5 of a ~100 KB dossier is ~4.5 ms of CPU). A key stored for the first
   * time is only marked (null): a body is kept from its second store on. Keeping every first
   * body (each paid miss's ~100 KB) held it past the young generation, and a promoted buffer is
   * freed only by a full mark-compact: one every ~30 paid misses, 4-15 ms each
   * (docs/performance.md, sixth pass).
   */
  private readonly lastPacked = new Map<
    string,
    { identity: Buffer; body: Buffer; packedEncoding: BodyEncoding; encoding: string; level: number } | null
  >();
  private readonly clock: Clock;
  private config: CacheConfig;
  private readonly onError: NonNullable<ResponseCacheOptions['onError']>;
  private readonly counters = new CacheCounters();

  constructor(options: ResponseCacheOptions) {
    this.store = options.store;
    this.clock = options.clock;
    this.config = options.config;
    this.onError = options.onError ?? (() => {});
  }

  /** Config reload: new max ages and stale bounds for every read and write from now on. */
  reconfigure(config: CacheConfig): void {
    this.config = config;
  }

  /** Whether answers of this route are ever cached (the pipeline skips the cache otherwise). */
  static isCacheableRoute(route: RouteName): boolean {
    return routeSpec(route).cache !== null;
  }

  /** The decision for one request. Never throws; a store fault is a miss. */
  async lookup(req: CacheRequest): Promise<Lookup> {
    const policy = policyOf(req);
    if (!policy) return { action: 'bypass' };
    const d = req.directives;
    const entry = await this.read(policy.key, req.route);
    if (!entry) {
      this.counters.count(req.route, d.onlyIfCached ? 'notCached' : 'misses');
      return d.onlyIfCached ? { action: 'not_cached' } : { action: 'fetch', reason: 'miss' };
    }
    const windowOpen =
      req.windowOpen === true || (req.windowOpenLater !== undefined && (await req.windowOpenLater));
    const ageMs = this.ageMs(entry);
    const decision = decide({
      ageMs,
      lifetimeMs: this.lifetime(entry.kind, req.app),
      directives: d,
      windowOpen,
      windowed: policy.windowed && entry.kind !== 'negative',
      windowRefreshAfterMs: this.config.windowRefreshAfterMs,
    });
    if (decision.serve) {
      this.counters.count(req.route, decision.stale ? 'stale' : 'hits');
      return {
        action: 'serve',
        entry,
        age: Math.floor(ageMs / 1000),
        status: decision.stale ? 'STALE' : 'HIT',
      };
    }
    if (decision.reason === 'not_cached') {
      this.counters.count(req.route, 'notCached');
      return { action: 'not_cached' };
    }
    this.counters.count(req.route, decision.reason === 'expired' ? 'misses' : 'refreshes');
    return { action: 'fetch', reason: decision.reason, staleEntry: entry };
  }

  /**
   * The hit path (pipeline/hit-path.ts): a fresh 200 entry this process holds, found without
   * waiting (the memory store, or the Redis store's in-process tier), for a request without
   * Cache-Control directives; counted as a hit. Null when the entry is not held here, is not
   * fresh, or an open window would refresh it for free: the pipeline decides those.
   */
  hotHit(
    route: RouteName,
    policy: CachePolicy,
    app: string | null,
    windowOpen: boolean,
  ): { entry: CacheEntry; ageMs: number } | null {
    const bytes = this.store.cachePeek?.(policy.key);
    if (!bytes) return null;
    const entry = this.decode(bytes);
    if (!entry || entry.route !== route || entry.status !== 200) return null;
    const ageMs = this.ageMs(entry);
    const decision = decide({
      ageMs,
      lifetimeMs: this.lifetime(entry.kind, app),
      directives: NO_DIRECTIVES,
      windowOpen,
      windowed: policy.windowed && entry.kind !== 'negative',
      windowRefreshAfterMs: this.config.windowRefreshAfterMs,
    });
    if (!decision.serve || decision.stale) return null;
    this.counters.count(route, 'hits');
    return { entry, ageMs };
  }

  /** Whether the store has an in-process tier the hit path can read. */
  get hasHotTier(): boolean {
    return typeof this.store.cachePeek === 'function';
  }

  /**
   * stale-if-error: the entry to serve (X-Cache: STALE) when the upstream call made after a
   * 'fetch' lookup failed with 502/503 or timed out; null when there is none within bounds.
   */
  onUpstreamError(
    staleEntry: CacheEntry | undefined,
    directives: RequestDirectives,
    app: string | null = null,
  ): CacheEntry | null {
    if (!staleEntry) return null;
    const ok = usableOnError({
      ageMs: this.ageMs(staleEntry),
      lifetimeMs: this.lifetime(staleEntry.kind, app),
      maxStaleMs: this.config.maxStaleMs,
      directives,
    });
    if (!ok) return null;
    this.counters.count(staleEntry.route, 'stale');
    return staleEntry;
  }

  /**
   * Stores an upstream answer when it may be stored: a 200 of a cacheable route, or a 404
   * not_found about an unknown INN (negative entry). Returns the stored entry (so a MISS can be
   * rendered through render() as well), or null. Never throws.
   */
  async save(req: CacheRequest, answer: UpstreamAnswer): Promise<CacheEntry | null> {
    const policy = policyOf(req);
    if (!policy || req.directives.noStore) return null;
    try {
      const kind = storableKind(req.route, policy, answer.status, answer.body);
      if (!kind) return null;
      if (kind === 'negative') {
        // An unknown-INN answer never displaces a good entry (a transient 404 is the likelier story).
        const existing = await this.read(policy.key, req.route);
        if (existing && existing.status === 200) return null;
      }
      const inn =
        policy.inn ?? req.inn ?? (req.route === 'check_poll' ? innOfCheckResult(answer.body) : null);
      // A large body is stored as it came and compressed off the answer's path (packLater):
      // brotli 5 of a ~100 KB dossier takes ~4.5 ms, which the caller would otherwise wait for.
      // The same body stored again (a pass-through of an unchanged answer) reuses its copy.
      const reused = this.packedBefore(policy.key, answer.body);
      const deferred =
        !reused && answer.body.length >= SYNC_LIMIT && answer.body.length >= this.config.compression.minBytes;
      const packed =
        reused ??
        (deferred
          ? { body: answer.body, encoding: 'identity' as const }
          : await compressBody(answer.body, this.config.compression));
      if (!reused && !deferred) this.rememberPacked(policy.key, answer.body, packed);
      const entry: CacheEntry = {
        status: answer.status,
        headers: selectHeaders(answer.headers),
        body: packed.body,
        encoding: packed.encoding,
        identityLength: answer.body.length,
        storedAt: this.clock.now(),
        inn,
        route: req.route,
        kind,
      };
      const ttlMs = storageTtlMs(this.config, kind);
      const bytes = encodeEntry(entry);
      // What a read of these bytes would decode (the body a view of them): a read of the entry
      // while the store holds these very bytes (memory, Redis's local tier) parses nothing.
      this.decoded.set(bytes, copyWith(entry, { body: bytes.subarray(bytes.length - entry.body.length) }));
      await this.store.cacheSet(policy.key, bytes, { ttlMs, tags: this.tags(req.route, inn) });
      if (deferred) this.packLater(policy.key, entry, bytes);
      this.counters.count(req.route, 'stores');
      this.counters.track(policy.key, req.route, inn, entry.storedAt + ttlMs, entry.storedAt);
      return entry;
    } catch (error) {
      this.counters.count(req.route, 'errors');
      this.onError(error, { op: 'save', key: policy.key });
      return null;
    }
  }

  /**
   * save() after the answer has been written (the next turn of the event loop): for answers whose
   * re-read costs no money, so that neither the store's round trip nor the compression of a small
   * body is on the answer's path. A read of the same key arriving before it is stored is a miss.
   */
  saveLater(req: CacheRequest, answer: UpstreamAnswer): void {
    const job: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.save(req, answer))
      .then(
        () => {},
        () => {},
      )
      .finally(() => this.packing.delete(job));
    this.packing.add(job);
  }

  /**
   * Resolves when the saves deferred by saveLater and the compressed copies being made now are
   * stored (or given up): tests, shutdown.
   */
  async packed(): Promise<void> {
    while (this.packing.size > 0) await Promise.all([...this.packing]);
  }

  /**
   * Compresses an entry stored uncompressed and swaps the copy in, unless the stored entry is no
   * longer this one (replaced, purged, expired): the store compares the entry's header bytes.
   */
  private packLater(key: string, entry: CacheEntry, stored: Buffer): void {
    const job: Promise<void> = (async () => {
      const packed = await compressBody(entry.body, this.config.compression);
      this.rememberPacked(key, entry.body, packed);
      if (packed.encoding === 'identity') return;
      const bytes = encodeEntry(copyWith(entry, { body: packed.body, encoding: packed.encoding }));
      await this.store.cacheReplace(key, stored.subarray(0, HEADER_BYTES), bytes);
    })()
      .catch((error: unknown) => {
        this.counters.count(entry.route, 'errors');
        this.onError(error, { op: 'pack', key });
      })
      .finally(() => this.packing.delete(job));
    this.packing.add(job);
  }

  /** The coding made last for this key when `body` is byte for byte the body it was made of. */
  private packedBefore(key: string, body: Buffer): { body: Buffer; encoding: BodyEncoding } | null {
    const last = this.lastPacked.get(key);
    const { encoding, level } = this.config.compression;
    if (!last || last.encoding !== encoding || last.level !== level || !last.identity.equals(body))
      return null;
    return { body: last.body, encoding: last.packedEncoding };
  }

  private rememberPacked(
    key: string,
    identity: Buffer,
    packed: { body: Buffer; encoding: BodyEncoding },
  ): void {
    if (identity.length < this.config.compression.minBytes) return;
    const { encoding, level } = this.config.compression;
    const again = this.lastPacked.has(key);
    this.lastPacked.delete(key);
    if (this.lastPacked.size >= LAST_PACKED_KEYS) {
      const oldest = this.lastPacked.keys().next().value;
      if (oldest !== undefined) this.lastPacked.delete(oldest);
    }
    this.lastPacked.set(
      key,
      again ? { identity, body: packed.body, packedEncoding: packed.encoding, encoding, level } : null,
    );
  }

  /** A stored entry as an answer, without counting a hit (coalesced followers after the leader saved). */
  async peek(req: KeyedRequest): Promise<CacheEntry | null> {
    const policy = policyOf(req);
    return policy ? this.read(policy.key, req.route) : null;
  }

  /** peek() of several requests in one store read (one round trip for one company's keys). */
  async peekMany(reqs: ReadonlyArray<KeyedRequest>): Promise<Array<CacheEntry | null>> {
    const keys = reqs.map((req) => policyOf(req)?.key ?? null);
    const asked = keys.filter((key): key is string => key !== null);
    let found: Array<Buffer | null>;
    try {
      found = await this.store.cacheGetMany(asked);
    } catch (error) {
      // One store read failed: one error, as read() counts it.
      if (reqs[0]) this.counters.count(reqs[0].route, 'errors');
      this.onError(error, { op: 'get', key: asked[0] ?? '' });
      return reqs.map(() => null);
    }
    const entries = asked.map((key, i) => this.entryOf(key, found[i] ?? null));
    let j = 0;
    return keys.map((key) => (key === null ? null : (entries[j++] ?? null)));
  }

  /**
   * The HTTP answer for an entry: status, stored headers, Age, X-Cache, Vary: Accept-Encoding,
   * and the body compressed as stored when the client accepts that coding (Content-Encoding
   * set), else decompressed once. The pipeline adds X-Request-Id, X-Charged-Minor and
   * X-Window-Expires.
   */
  render(
    entry: CacheEntry,
    acceptEncoding: string | readonly string[] | undefined,
    xCache: CacheStatusHeader = 'HIT',
  ): RenderedAnswer {
    const headers: Record<string, string> = copyWith(entry.headers, {
      age: String(Math.floor(this.ageMs(entry) / 1000)),
      'x-cache': xCache,
      vary: 'Accept-Encoding',
    });
    if (entry.encoding === 'identity') return { status: entry.status, headers, body: entry.body };
    if (acceptsCoding(acceptEncoding, entry.encoding)) {
      headers['content-encoding'] = entry.encoding;
      return { status: entry.status, headers, body: entry.body };
    }
    if (entry.encoding !== 'gzip' && acceptsCoding(acceptEncoding, 'gzip')) {
      const packed = gzipOf(entry.body, entry.encoding, entry.storedAt, GZIP_VARIANT_LEVEL);
      if (packed) {
        headers['content-encoding'] = 'gzip';
        return { status: entry.status, headers, body: packed };
      }
      return {
        status: entry.status,
        headers,
        body: identityOf(entry.body, entry.encoding, entry.storedAt),
        provisional: true,
      };
    }
    return { status: entry.status, headers, body: identityOf(entry.body, entry.encoding, entry.storedAt) };
  }

  /** Deletes every entry about one INN (dossier, sections, requisites, person, negative, checks). */
  async purgeInn(inn: string): Promise<number> {
    if (!/^(\d{10}|\d{12})$/.test(inn)) throw new RangeError(`not an INN: ${JSON.stringify(inn)}`);
    const purged = await this.store.cachePurgeTag(innTag(inn));
    this.counters.untrackInn(inn);
    return purged;
  }

  /** Deletes the entry of one request (admin, tests). */
  async delete(req: KeyedRequest): Promise<void> {
    const policy = policyOf(req);
    if (!policy) return;
    await this.store.cacheDelete(policy.key);
    this.counters.untrack(policy.key);
  }

  /** This replica's counters per route, with the store's byte count. */
  async stats(): Promise<CacheStats> {
    let bytes: number | null = null;
    try {
      bytes = await this.store.cacheBytes();
    } catch (error) {
      this.onError(error, { op: 'stats', key: '' });
    }
    return this.counters.snapshot(this.clock.now(), bytes);
  }

  /** The store key of a request, or null when its route is never cached (logs, admin). */
  keyOf(req: KeyedRequest): CachePolicy | null {
    return policyOf(req);
  }

  private async read(key: string, route: RouteName): Promise<CacheEntry | null> {
    let bytes: Buffer | null;
    try {
      bytes = await this.store.cacheGet(key);
    } catch (error) {
      this.counters.count(route, 'errors');
      this.onError(error, { op: 'get', key });
      return null;
    }
    return this.entryOf(key, bytes);
  }

  /** The stored bytes as an entry; bytes that do not decode are reported and dropped. */
  private entryOf(key: string, bytes: Buffer | null): CacheEntry | null {
    if (!bytes) return null;
    const entry = this.decode(bytes);
    if (!entry) {
      this.onError(new Error('undecodable cache entry dropped'), { op: 'decode', key });
      void this.store.cacheDelete(key).catch(() => {});
    }
    return entry;
  }

  /** decodeEntry once per stored Buffer (an in-process tier hands out the same one each read). */
  private decode(bytes: Buffer): CacheEntry | null {
    let entry = this.decoded.get(bytes);
    if (entry) return entry;
    entry = decodeEntry(bytes) ?? undefined;
    if (entry) this.decoded.set(bytes, entry);
    return entry ?? null;
  }

  private ageMs(entry: CacheEntry): number {
    return Math.max(0, this.clock.now() - entry.storedAt);
  }

  private lifetime(kind: CacheKind, app: string | null): number {
    return maxAgeFor(this.config, kind, app);
  }

  private tags(route: RouteName, inn: string | null): string[] {
    const tags: string[] = [];
    if (inn) tags.push(innTag(inn));
    if (this.config.routeTags) tags.push(routeTag(route));
    return tags;
  }
}

/** The policy the caller handed in, else the route table's for this request. */
function policyOf(req: KeyedRequest): CachePolicy | null {
  return req.policy !== undefined ? req.policy : cachePolicy(req.route, req.params, req.query);
}

/** The company's INN in a check result (dossier: company.inn; requisites result: requisites.inn). */
function innOfCheckResult(body: Buffer): string | null {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as {
      company?: { inn?: unknown };
      requisites?: { inn?: unknown };
      inn?: unknown;
    } | null;
    const inn = parsed?.company?.inn ?? parsed?.requisites?.inn ?? parsed?.inn;
    return typeof inn === 'string' && /^(\d{10}|\d{12})$/.test(inn) ? inn : null;
  } catch {
    return null;
  }
}
