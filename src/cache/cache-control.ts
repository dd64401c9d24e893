// Parses a request's Cache-Control into the directives the response cache honours
// (RFC 9111 §5.2.1, plus stale-if-error from RFC 5861 §4). Pure: no clock, no I/O.
//
// Robust to spacing, case, quoted arguments (RFC 9111 §5.2: recipients accept both token and
// quoted-string forms), repeated header lines and unknown directives (ignored). An invalid
// delta-seconds argument is never a reason to be more permissive than the client asked:
//   max-age=<invalid>        → max-age=0      (RFC 9111 §4.2.1: invalid freshness means stale)
//   max-stale=<invalid>      → max-stale=0    (accept no staleness)
//   stale-if-error=<invalid> → stale-if-error=0
//   min-fresh=<invalid>      → ignored        (a huge value would refuse every entry; 0 would be a guess)
// A directive given twice keeps its most restrictive value (RFC 9111 §4.2.1): the smaller
// max-age / max-stale / stale-if-error, the larger min-fresh; a bare max-stale loses to a
// numbered one. Values past 2^31 are clamped to 2^31 (RFC 9111 §1.2.2).
//
// Must never: throw on any header value, or turn an unparsable value into "accept anything".

export interface RequestDirectives {
  /** max-age=N: accept a stored answer at most N seconds old. */
  maxAge?: number;
  /** max-stale[=N]: accept an answer stale by at most N seconds; `true` = any staleness. */
  maxStale?: number | true;
  /** min-fresh=N: the answer must stay fresh for at least N more seconds. */
  minFresh?: number;
  /** no-cache: do not serve a stored answer without going upstream. */
  noCache: boolean;
  /** no-store: do not store this request's answer (a stored answer may still be served). */
  noStore: boolean;
  /** only-if-cached: never go upstream; a miss is 504 not_cached. */
  onlyIfCached: boolean;
  /** stale-if-error=N (RFC 5861): on an upstream failure accept an answer stale by at most N s. */
  staleIfError?: number;
}

/** What a request without Cache-Control means. */
export const NO_DIRECTIVES: Readonly<RequestDirectives> = Object.freeze({
  noCache: false,
  noStore: false,
  onlyIfCached: false,
});

/** RFC 9111 §1.2.2: the greatest delta-seconds a cache needs to represent. */
export const DELTA_SECONDS_MAX = 2_147_483_648;

/** Parses one or more Cache-Control header values (repeated lines are one comma list). */
export function parseCacheControl(header: string | readonly string[] | undefined): RequestDirectives {
  const out: RequestDirectives = { noCache: false, noStore: false, onlyIfCached: false };
  if (header === undefined) return out;
  const text = typeof header === 'string' ? header : header.join(',');
  for (const { name, value } of splitDirectives(text)) {
    switch (name) {
      case 'max-age':
        out.maxAge = minDefined(out.maxAge, deltaSeconds(value) ?? 0);
        break;
      case 'max-stale': {
        if (value === undefined) {
          if (out.maxStale === undefined) out.maxStale = true;
        } else {
          const n = deltaSeconds(value) ?? 0;
          out.maxStale = out.maxStale === undefined || out.maxStale === true ? n : Math.min(out.maxStale, n);
        }
        break;
      }
      case 'min-fresh': {
        const n = deltaSeconds(value);
        if (n !== undefined) out.minFresh = Math.max(out.minFresh ?? 0, n);
        break;
      }
      case 'stale-if-error':
        out.staleIfError = minDefined(out.staleIfError, deltaSeconds(value) ?? 0);
        break;
      case 'no-cache':
        out.noCache = true;
        break;
      case 'no-store':
        out.noStore = true;
        break;
      case 'only-if-cached':
        out.onlyIfCached = true;
        break;
      default:
        break; // unknown directives (and no-transform) are ignored, as RFC 9111 §5.2.3 asks
    }
  }
  return out;
}

/** Renders directives back to a header value (logs, tests). */
export function formatDirectives(d: RequestDirectives): string {
  const parts: string[] = [];
  if (d.maxAge !== undefined) parts.push(`max-age=${d.maxAge}`);
  if (d.maxStale !== undefined) parts.push(d.maxStale === true ? 'max-stale' : `max-stale=${d.maxStale}`);
  if (d.minFresh !== undefined) parts.push(`min-fresh=${d.minFresh}`);
  if (d.staleIfError !== undefined) parts.push(`stale-if-error=${d.staleIfError}`);
  if (d.noCache) parts.push('no-cache');
  if (d.noStore) parts.push('no-store');
  if (d.onlyIfCached) parts.push('only-if-cached');
  return parts.join(', ');
}

function minDefined(current: number | undefined, next: number): number {
  return current === undefined ? next : Math.min(current, next);
}

/** delta-seconds = 1*DIGIT; anything else (empty, sign, fraction, absent) is undefined. */
function deltaSeconds(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Math.min(n, DELTA_SECONDS_MAX);
}

interface RawDirective {
  name: string;
  value: string | undefined;
}

/** Splits `a, b=1, c="x,y"` at commas outside quoted strings; names lower-cased, quotes removed. */
function splitDirectives(text: string): RawDirective[] {
  const out: RawDirective[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    // name
    while (i < n && (text[i] === ',' || isSpace(text[i]!))) i++;
    const nameStart = i;
    while (i < n && text[i] !== '=' && text[i] !== ',' && !isSpace(text[i]!)) i++;
    const name = text.slice(nameStart, i).toLowerCase();
    while (i < n && isSpace(text[i]!)) i++;
    let value: string | undefined;
    if (text[i] === '=') {
      i++;
      while (i < n && isSpace(text[i]!)) i++;
      if (text[i] === '"') {
        i++;
        let v = '';
        while (i < n && text[i] !== '"') {
          if (text[i] === '\\' && i + 1 < n) i++;
          v += text[i];
          i++;
        }
        i++; // closing quote (or end of text for an unterminated string)
        value = v;
      } else {
        const valueStart = i;
        while (i < n && text[i] !== ',' && !isSpace(text[i]!)) i++;
        value = text.slice(valueStart, i);
      }
    }
    // skip anything left up to the next comma (junk after a value is dropped)
    while (i < n && text[i] !== ',') i++;
    if (name) out.push({ name, value });
  }
  return out;
}

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t';
}
