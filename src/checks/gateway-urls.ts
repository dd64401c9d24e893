// URLs handed to apps name the gateway, never the upstream: the 202 ticket's poll_url, an
// event's dossier_url, openapi.json's servers. The gateway's address is server.publicUrl, else
// the one THIS requester used: its Host header, or behind a trusted proxy (server.trustProxy)
// the proxy's `Forwarded` / `X-Forwarded-Host`/`-Proto`/`-Port`. A header value is used only
// when it is a well-formed host[:port] (RFC 3986 reg-name, IPv4 or [IPv6]); anything else falls
// back to the listen address. Pure functions.
//
// Must never: hand out the upstream's address, rewrite anything outside the upstream's origin,
// give one app an address another app sent (callers keep a requester's base for that requester
// only: check-tickets.ts), or build JSON by pasting text into it.
import type { GatewayConfig } from '../config/schema.ts';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();

// reg-name (letters, digits, '-', '.', '_' and '~': no '%', no sub-delims that could break a URL
// or JSON) or an IPv6 literal in brackets; an optional port of 1-5 digits.
const HOST_RE =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9._~-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::(\d{1,5}))?$/;
const PORT_RE = /^\d{1,5}$/;

/** A host[:port] an app or a proxy sent, lower-cased, or null when it is not well formed. */
export function validHost(value: string | undefined): string | null {
  if (!value) return null;
  const m = HOST_RE.exec(value);
  if (!m) return null;
  if (m[1] !== undefined && Number(m[1]) > 65_535) return null;
  return value.toLowerCase();
}

/** The first element of an RFC 7239 `Forwarded` header as {host, proto} (quoted values allowed). */
export function parseForwarded(header: string | string[] | undefined): { host?: string; proto?: string } {
  const element = first(header);
  if (!element) return {};
  const out: { host?: string; proto?: string } = {};
  for (const pair of element.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(0, eq).trim().toLowerCase();
    let value = pair.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (name === 'host') out.host = value;
    else if (name === 'proto') out.proto = value.toLowerCase();
  }
  return out;
}

const listenBase = (config: GatewayConfig): string => {
  const h = config.server.host;
  const host = h === '0.0.0.0' || h === '::' || h === '' ? '127.0.0.1' : h.includes(':') ? `[${h}]` : h;
  return `http://${host}:${config.server.port}`;
};

/** The gateway's base URL (no trailing slash) as this requester reaches it. */
export function publicBase(config: GatewayConfig, headers: Headers): string {
  if (config.server.publicUrl) return config.server.publicUrl.replace(/\/+$/, '');
  let proto: string | undefined;
  let host: string | null = null;
  if (config.server.trustProxy) {
    const fwd = parseForwarded(headers.forwarded);
    proto = fwd.proto ?? first(headers['x-forwarded-proto'])?.toLowerCase();
    host = validHost(fwd.host) ?? validHost(first(headers['x-forwarded-host']));
    const port = first(headers['x-forwarded-port']);
    if (host && port && PORT_RE.test(port) && Number(port) <= 65_535 && !/:\d+$/.test(host)) {
      const defaultPort = proto === 'https' ? '443' : '80';
      if (port !== defaultPort) host = `${host}:${port}`;
    }
  }
  host ??= validHost(first(headers.host));
  if (host === null) return listenBase(config);
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

/** The upstream's origin as it appears in its bodies. */
export const upstreamOrigin = (config: GatewayConfig) => new URL(config.upstream.url).origin;

/**
 * Every string in a JSON text that starts with the upstream's origin gets the gateway's base
 * instead; the text is parsed and serialized again, so nothing in `base` can change its shape.
 * A body that is not JSON is returned as it is.
 */
export function toGatewayUrls(text: string, upstream: string, base: string): string {
  if (upstream === base || !text.includes(upstream)) return text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  return JSON.stringify(rewrite(parsed, upstream, base));
}

function rewrite(value: unknown, upstream: string, base: string): unknown {
  if (typeof value === 'string') {
    return value.startsWith(upstream) &&
      (value.length === upstream.length || '/?#'.includes(value[upstream.length]!))
      ? base + value.slice(upstream.length)
      : value;
  }
  if (Array.isArray(value)) return value.map((v) => rewrite(v, upstream, base));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = rewrite(v, upstream, base);
    return out;
  }
  return value;
}
