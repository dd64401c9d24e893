// The cache policy of one request, one builder per cached route: the store key (route, path
// parameters, normalized query), the TTL kind, the INN the entry is about and whether an open
// window makes a refresh free. The route table (src/route-table.ts) names a builder per route;
// everything that asks "the policy of this request" goes through the table (cache-keys.ts).
// Pure functions only.
//
// Keys are shared by every app on purpose (they share one account); the app is never part of
// a key. A key names the company's INN as its own `:`-separated segment, so the Redis store puts
// every entry of one company in that company's cluster slot.
//
// Must never: import the route table (it imports this module: the table stays a leaf), let two
// requests that can get different upstream answers share a key, or let a query parameter the
// upstream ignores split one answer into many keys.
import { createHash } from 'node:crypto';
import type { CacheKind } from './cache-config.ts';

export interface CachePolicy {
  /** Logical store key, e.g. "company:7707083893". */
  key: string;
  kind: CacheKind;
  /** The company or person the entry is about (null for bank, suggest, search, unknown checks). */
  inn: string | null;
  /** True when an open coverage window makes an upstream refresh free (dossier, section, requisites). */
  windowed: boolean;
}

/** Query text longer than this (UTF-8 bytes, encoded) is replaced by its hash in the key. */
const MAX_PLAIN_QUERY_BYTES = 64;

type Params = Readonly<Record<string, string | undefined>>;
type Query = Readonly<Record<string, unknown>>;

export function companyPolicy(params: Params): CachePolicy | null {
  const inn = params.inn;
  return inn ? { key: `company:${inn}`, kind: 'dossier', inn, windowed: true } : null;
}

export function sectionPolicy(params: Params, query: Query): CachePolicy | null {
  const { inn, section } = params;
  if (!inn || !section) return null;
  const cursor = stringParam(query.cursor);
  // An absent cursor and an empty one are kept apart: the spec does not say they are the same page.
  const page = cursor === undefined ? '-' : `c=${queryText(cursor)}`;
  return { key: `section:${inn}:${section}:${page}`, kind: 'dossier', inn, windowed: true };
}

export function requisitesPolicy(params: Params): CachePolicy | null {
  const inn = params.inn;
  return inn ? { key: `requisites:${inn}`, kind: 'requisites', inn, windowed: true } : null;
}

export function personPolicy(params: Params): CachePolicy | null {
  const inn = params.inn;
  return inn ? { key: `person:${inn}`, kind: 'person', inn, windowed: false } : null;
}

export function bankPolicy(params: Params): CachePolicy | null {
  const bic = params.bic;
  return bic ? { key: `bank:${bic}`, kind: 'bank', inn: null, windowed: false } : null;
}

export function checkPolicy(params: Params): CachePolicy | null {
  // Check ids are compared in canonical lower case, as the upstream does.
  const uuid = params.uuid?.toLowerCase();
  return uuid ? { key: `check:${uuid}`, kind: 'check', inn: null, windowed: false } : null;
}

export function suggestPolicy(_params: Params, query: Query): CachePolicy | null {
  const q = normalizeQueryText(stringParam(query.q));
  return q === undefined
    ? null
    : { key: `suggest:${queryText(q)}`, kind: 'suggest', inn: null, windowed: false };
}

export function searchPolicy(_params: Params, query: Query): CachePolicy | null {
  const q = normalizeQueryText(stringParam(query.q));
  if (q === undefined) return null;
  const kind = stringParam(query.kind) ?? 'all';
  const pageText = stringParam(query.page);
  const page = pageText === undefined ? 1 : Number.parseInt(pageText, 10);
  if (!Number.isSafeInteger(page)) return null;
  return {
    key: `search:${encodeURIComponent(kind)}:${page}:${queryText(q)}`,
    kind: 'search',
    inn: null,
    windowed: false,
  };
}

/**
 * Search and suggest text as one key: exactly as sent. The upstream echoes `query` as sent
 * (`q=Газпром%20%20` answers `"query":"Газпром  "`), so no trimming, no collapsing of spaces, no
 * Unicode normalization and no case folding: two texts the upstream may answer differently never
 * share an entry (docs/upstream-gaps.md). Empty text has no key.
 */
export function normalizeQueryText(q: string | undefined): string | undefined {
  return q === undefined || q.length === 0 ? undefined : q;
}

/** A query value as a key segment: percent-encoded (no `:` inside), or its hash when long. */
function queryText(text: string): string {
  const encoded = encodeURIComponent(text);
  if (encoded.length <= MAX_PLAIN_QUERY_BYTES) return encoded;
  return `h.${createHash('sha256').update(text).digest('base64url').slice(0, 32)}`;
}

function stringParam(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && typeof value.at(-1) === 'string') return value.at(-1) as string;
  return undefined;
}
