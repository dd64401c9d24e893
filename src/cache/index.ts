// The response cache's public surface for the pipeline, the admin API and the config schema.
export {
  CACHE_KINDS,
  type CacheConfig,
  type CacheConfigInput,
  type CacheKind,
  cacheConfigSchema,
  DEFAULT_MAX_AGE_MS,
  maxAgeFor,
  resolveCacheConfig,
  storageTtlMs,
} from './cache-config.ts';
export { NO_DIRECTIVES, parseCacheControl, type RequestDirectives } from './cache-control.ts';
export { type CacheEntry, decodeEntry, encodeEntry } from './cache-entry.ts';
export { type CachePolicy, cachePolicy, innTag } from './cache-keys.ts';
export type { CacheStats, RouteCacheStats } from './cache-stats.ts';
export { acceptsCoding } from './content-coding.ts';
export type { FetchReason } from './freshness.ts';
export {
  type CacheRequest,
  type CacheStatusHeader,
  type Lookup,
  type RenderedAnswer,
  ResponseCache,
  type ResponseCacheOptions,
  type UpstreamAnswer,
} from './response-cache.ts';
