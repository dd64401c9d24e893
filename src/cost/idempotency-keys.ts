// Idempotency keys for charged upstream calls (DESIGN.md "Cost rules"). A client key is
// namespaced per app, so two apps using the same key never collide; with no client key the
// gateway derives one from the normalized request and the 15-minute time bucket, so a retry
// or a duplicate on another replica is charged once. Keys fit the upstream's 64 characters.
import { createHash } from 'node:crypto';

const BUCKET_MS = 15 * 60_000;

function digest(...parts: string[]): string {
  const h = createHash('sha256');
  for (const part of parts) h.update(part).update('\u0000');
  return h.digest('base64url');
}

/** `gw1-` + base64url(SHA-256(app, client key)): 47 characters. */
export function namespacedKey(app: string, clientKey: string): string {
  return `gw1-${digest('client', app, clientKey)}`;
}

/** Normalizes a path and query: query parameters sorted, so equal requests get equal keys. */
export function normalizedTarget(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  if (q < 0) return pathAndQuery;
  const params = new URLSearchParams(pathAndQuery.slice(q + 1));
  params.sort();
  const query = params.toString();
  return query ? `${pathAndQuery.slice(0, q)}?${query}` : pathAndQuery.slice(0, q);
}

/** Canonical JSON: object keys sorted, so bodies that differ only in key order match. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** `gw1d-` + base64url(SHA-256(method, target, body, bucket)): 48 characters. */
export function derivedKey(method: string, pathAndQuery: string, body: unknown, nowMs: number): string {
  const bucket = Math.floor(nowMs / BUCKET_MS);
  return `gw1d-${digest('derived', method, normalizedTarget(pathAndQuery), body === undefined ? '' : canonicalJson(body), String(bucket))}`;
}
