// The response cache's settings: maximum age per kind of answer (globally and per app), how
// stale an entry may be served when the upstream fails, the in-window refresh age and the
// body compression. The zod schema is ready to be embedded in the gateway config
// (`cache: cacheConfigSchema.prefault({})`); defaults follow DESIGN.md "Cache".
//
// Must never: let a per-app override shorten how long an entry is KEPT (the store TTL is the
// longest age any app may accept, plus the stale allowance), only how old an entry an app accepts.
import { z } from 'zod';
import { SECTION_NAMES } from '../domain/requests.ts';

/** TTL classes. `dossier` covers the whole dossier and its sections; `negative` is a 404 unknown INN. */
export const CACHE_KINDS = [
  'dossier',
  'requisites',
  'bank',
  'person',
  'suggest',
  'search',
  'check',
  'negative',
] as const;
export type CacheKind = (typeof CACHE_KINDS)[number];

export type BodyCoding = 'gzip' | 'br';

export interface CompressionConfig {
  /**
   * Coding used for new entries; entries in the other coding are still read. Default brotli
   * quality 5: a ~100 KB dossier becomes ~15 KB, which fits jemalloc's 16 KiB class in Redis
   * (gzip-6 gives ~16.7 KB, which lands in the 20 KiB class: MEMORY USAGE ~20.6 KB).
   * See docs/cache.md and bench/cache-codec.ts for the measurements.
   */
  encoding: BodyCoding;
  /** gzip 1..9, brotli 0..11. */
  level: number;
  /** Bodies smaller than this are stored as they are. */
  minBytes: number;
}

export interface CacheConfig {
  maxAgeMs: Record<CacheKind, number>;
  /** Per app: overrides of maxAgeMs for that app's reads. */
  perApp?: Record<string, Partial<Record<CacheKind, number>>>;
  /** How far past its max age an entry may be served when the upstream fails (stale-if-error). */
  maxStaleMs: number;
  /**
   * Inside an open (free) window, an entry of a window-covered route (dossier, section,
   * requisites) older than this is refreshed upstream although still fresh: it costs no
   * money, only one rate-limit slot. null = refresh only entries past their max age.
   */
  windowRefreshAfterMs: number | null;
  compression: CompressionConfig;
  /**
   * Also tag entries `route:<name>`. Off by default: a Redis tag set is a plain set that keeps
   * members until the set itself expires, so a global per-route set grows with every key seen.
   */
  routeTags: boolean;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const DEFAULT_MAX_AGE_MS: Readonly<Record<CacheKind, number>> = Object.freeze({
  dossier: 6 * HOUR,
  requisites: DAY,
  bank: DAY,
  person: DAY,
  suggest: HOUR,
  search: 10 * MINUTE,
  check: 7 * DAY,
  negative: HOUR,
});

const ageMs = z
  .number()
  .int()
  .min(0)
  .max(30 * DAY);

const maxAgeShape = Object.fromEntries(
  CACHE_KINDS.map((kind) => [kind, ageMs.default(DEFAULT_MAX_AGE_MS[kind])]),
) as Record<CacheKind, z.ZodDefault<typeof ageMs>>;

const perAppShape = Object.fromEntries(CACHE_KINDS.map((kind) => [kind, ageMs.optional()])) as Record<
  CacheKind,
  z.ZodOptional<typeof ageMs>
>;

export const cacheConfigSchema = z
  .object({
    maxAgeMs: z.object(maxAgeShape).strict().prefault({}),
    perApp: z.record(z.string(), z.object(perAppShape).strict()).optional(),
    maxStaleMs: z
      .number()
      .int()
      .min(0)
      .max(30 * DAY)
      .default(DAY),
    windowRefreshAfterMs: z
      .number()
      .int()
      .min(0)
      .nullable()
      .default(15 * MINUTE),
    compression: z
      .object({
        encoding: z.enum(['gzip', 'br']).default('br'),
        level: z.number().int().min(0).max(11).default(5),
        minBytes: z.number().int().min(0).default(1024),
      })
      .strict()
      .refine((c) => c.encoding !== 'gzip' || (c.level >= 1 && c.level <= 9), {
        message: 'gzip level must be 1..9',
        path: ['level'],
      })
      .prefault({}),
    routeTags: z.boolean().default(false),
    /**
     * Section reads answered from the cached dossier (stages/derive.ts): per section name `on`
     * (pinned), `off` (never) or `learn` (the default for every name: derived once found equal
     * `sectionsLearnAfter` times and never different).
     */
    sectionsFromDossier: z.partialRecord(z.enum(SECTION_NAMES), z.enum(['on', 'off', 'learn'])).default({}),
    sectionsLearnAfter: z.number().int().min(1).max(1000).default(1),
    /** A paid section read that opened a window brings the dossier in inside it (free). */
    prefetchDossier: z.boolean().default(true),
  })
  .strict();

export type CacheConfigInput = z.input<typeof cacheConfigSchema>;

/** Validates and fills defaults; throws a ZodError listing every problem. */
export function resolveCacheConfig(input: CacheConfigInput = {}): CacheConfig {
  const parsed = cacheConfigSchema.parse(input);
  const config: CacheConfig = {
    maxAgeMs: parsed.maxAgeMs,
    maxStaleMs: parsed.maxStaleMs,
    windowRefreshAfterMs: parsed.windowRefreshAfterMs,
    compression: parsed.compression,
    routeTags: parsed.routeTags,
  };
  if (parsed.perApp) config.perApp = parsed.perApp as CacheConfig['perApp'];
  return config;
}

/** The max age an app accepts for a kind: its own override, else the global value. */
export function maxAgeFor(config: CacheConfig, kind: CacheKind, app: string | null | undefined): number {
  const own = app ? config.perApp?.[app]?.[kind] : undefined;
  return own ?? config.maxAgeMs[kind];
}

/** How long the store keeps an entry: the longest max age any app accepts, plus the stale allowance. */
export function storageTtlMs(config: CacheConfig, kind: CacheKind): number {
  let longest = config.maxAgeMs[kind];
  for (const overrides of Object.values(config.perApp ?? {})) {
    const own = overrides[kind];
    if (own !== undefined && own > longest) longest = own;
  }
  return Math.max(1, longest + config.maxStaleMs);
}

export type ParsedCacheConfig = z.output<typeof cacheConfigSchema>;

/** The gateway config's parsed `cache` section is already a CacheConfig (checked by the compiler here). */
export function cacheConfigFrom(parsed: ParsedCacheConfig): CacheConfig {
  return parsed;
}
