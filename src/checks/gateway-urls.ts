// URLs handed to apps name the gateway, never the upstream: the 202 ticket's poll_url, an
// event's dossier_url, openapi.json's servers. The gateway's address is server.publicUrl, else
// the one the app used (its Host header; X-Forwarded-Proto/Host only behind a trusted proxy).
// Pure functions.
//
// Must never: hand out the upstream's address, or rewrite anything outside the upstream's origin.
import type { GatewayConfig } from '../config/schema.ts';

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(',')[0]?.trim();

/** The gateway's base URL (no trailing slash) as apps reach it. */
export function publicBase(config: GatewayConfig, headers: Headers): string {
  if (config.server.publicUrl) return config.server.publicUrl.replace(/\/+$/, '');
  const proxied = config.server.trustProxy;
  const proto = (proxied && first(headers['x-forwarded-proto'])) || 'http';
  const host = (proxied && first(headers['x-forwarded-host'])) || first(headers.host) || '127.0.0.1';
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

/** The upstream's origin as it appears in its bodies. */
export const upstreamOrigin = (config: GatewayConfig) => new URL(config.upstream.url).origin;

/** Every occurrence of the upstream's origin in a JSON text, replaced by the gateway's base. */
export function toGatewayUrls(text: string, upstream: string, base: string): string {
  return upstream === base ? text : text.split(upstream).join(base);
}
