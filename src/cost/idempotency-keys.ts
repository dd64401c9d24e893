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
 * `gw1r-` + the request id: the key of one logical request made without a client key (41
 * characters). A request id is unique within a process (its counter) and across processes and
 * restarts (90 random bits per process: ops/request-id.ts), and never comes from a client; a
 * client's key is `gw1-` and a hash, so it never takes this shape. Its retries and its
 * reconciliation reuse it; no other request ever does. (It was a SHA-256 of the id: createHash's
 * setup cost ~7-10 µs of every charged or in-window read, docs/performance.md tenth pass.)
 */
export function requestKey(requestId: string): string {
  return `gw1r-${requestId}`;
}
