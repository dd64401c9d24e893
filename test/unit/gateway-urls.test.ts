// The address handed to an app (checks/gateway-urls.ts): server.publicUrl, else the requester's
// own validated Host, or behind a trusted proxy its Forwarded / X-Forwarded-* headers. Anything
// not host[:port] falls back to the listen address; JSON bodies are rewritten by serialization.
import { describe, expect, it } from 'vitest';
import { parseForwarded, publicBase, toGatewayUrls, validHost } from '../../src/checks/gateway-urls.ts';
import { configSchema } from '../../src/config/schema.ts';

const config = (server: Record<string, unknown> = {}) =>
  configSchema.parse({
    server: { port: 8080, ...server },
    apps: [{ name: 'a', tokenHash: `sha256:${'a'.repeat(64)}` }],
  });

describe('publicBase', () => {
  it('prefers server.publicUrl over any header', () => {
    expect(publicBase(config({ publicUrl: 'https://gw.corp/' }), { host: 'evil.example' })).toBe(
      'https://gw.corp',
    );
  });
  it("uses the requester's Host when it is host[:port], else the listen address", () => {
    const c = config();
    expect(publicBase(c, { host: 'GW.corp:8443' })).toBe('http://gw.corp:8443');
    expect(publicBase(c, { host: '[::1]:8080' })).toBe('http://[::1]:8080');
    for (const bad of ['a"b', 'a b', 'x/y', 'h:99999', 'a%2fb', '', 'user@host', 'h:1:2']) {
      expect(publicBase(c, { host: bad }), bad).toBe('http://127.0.0.1:8080');
    }
    expect(publicBase(c, {})).toBe('http://127.0.0.1:8080');
  });
  it('ignores forwarded headers unless server.trustProxy', () => {
    const headers = {
      host: 'gw.internal:8080',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
    };
    expect(publicBase(config(), headers)).toBe('http://gw.internal:8080');
    expect(publicBase(config({ trustProxy: true }), headers)).toBe('https://evil.example');
  });
  it('behind a trusted proxy: Forwarded first, then X-Forwarded-Host/-Proto/-Port', () => {
    const c = config({ trustProxy: true });
    expect(publicBase(c, { host: 'x', forwarded: 'for=1.2.3.4;host="gw.corp:9443";proto=https' })).toBe(
      'https://gw.corp:9443',
    );
    expect(publicBase(c, { host: 'x', 'x-forwarded-host': 'gw.corp', 'x-forwarded-port': '8443' })).toBe(
      'http://gw.corp:8443',
    );
    expect(
      publicBase(c, {
        host: 'x',
        'x-forwarded-host': 'gw.corp',
        'x-forwarded-proto': 'https',
        'x-forwarded-port': '443',
      }),
    ).toBe('https://gw.corp');
    // A malformed forwarded host falls back to Host, never into the URL.
    expect(publicBase(c, { host: 'gw.internal', 'x-forwarded-host': 'a"b' })).toBe('http://gw.internal');
  });
  it('parses RFC 7239 elements', () => {
    expect(parseForwarded('host=a.b;proto=HTTPS, host=c.d')).toEqual({ host: 'a.b', proto: 'https' });
    expect(parseForwarded(undefined)).toEqual({});
    expect(validHost('a.b:0080')).toBe('a.b:0080');
  });
});

describe('toGatewayUrls', () => {
  it('rewrites strings that start with the upstream origin, by serialization', () => {
    const text = JSON.stringify({ poll_url: 'https://api.up/v1/checks/1', other: 'https://api.upx/y', n: 1 });
    const out = JSON.parse(toGatewayUrls(text, 'https://api.up', 'http://gw:8080')) as Record<
      string,
      unknown
    >;
    expect(out).toEqual({ poll_url: 'http://gw:8080/v1/checks/1', other: 'https://api.upx/y', n: 1 });
  });
  it('leaves a body that is not JSON as it is', () => {
    expect(toGatewayUrls('not json https://api.up', 'https://api.up', 'http://gw')).toBe(
      'not json https://api.up',
    );
  });
});
