// Idempotency keys for charged upstream calls (DESIGN.md "Cost rules"). A client key is
// namespaced per app, so two apps using the same key never collide; with no client key the
// gateway makes one per logical request (not per time bucket: a bucket let the upstream replay
// an older call's answer to a later no-cache read). Concurrent duplicates are charged once by
// coalescing and the charge gate, not by sharing a key. Keys fit the upstream's 64 characters.
import { createHash } from 'node:crypto';

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

/**
 * `gw1r-` + base64url(SHA-256(request id)): the key of one logical request made without a client
 * key (48 characters). Its retries and its reconciliation reuse it; no other request ever does.
 */
export function requestKey(requestId: string): string {
  return `gw1r-${digest('request', requestId)}`;
}
