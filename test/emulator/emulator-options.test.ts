// The emulator's configuration surface: key spec syntax, CLI flags and CPGW_EMULATOR_*
// variables (flags win), and option validation that reports every problem at once.
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/emulator/emulator-config.ts';
import { KeyRegistry, parseKeySpec } from '../../src/emulator/key-registry.ts';
import { parseEmulatorArgs } from '../../src/emulator/main.ts';

describe('key spec', () => {
  it('defaults to a production key with every scope, account 1, no expiry', () => {
    expect(parseKeySpec('emulator-key')).toEqual({
      token: 'emulator-key',
      name: 'emulator-key',
      accountId: 1,
      environment: 'production',
      scopes: ['read:companies', 'read:checks', 'read:persons'],
      expiresAt: null,
      revoked: false,
    });
  });

  it('parses every attribute', () => {
    expect(
      parseKeySpec(
        'tok;name=ci;account=2;env=sandbox;scopes=read:companies+read:checks;expires=2030-01-01T00:00:00Z;revoked',
      ),
    ).toEqual({
      token: 'tok',
      name: 'ci',
      accountId: 2,
      environment: 'sandbox',
      scopes: ['read:companies', 'read:checks'],
      expiresAt: Date.UTC(2030, 0, 1),
      revoked: true,
    });
    expect(parseKeySpec('t;scopes=').scopes).toEqual([]);
  });

  it('rejects unknown attributes and bad values', () => {
    expect(() => parseKeySpec('t;colour=red')).toThrow(/unknown attribute/);
    expect(() => parseKeySpec('t;env=staging')).toThrow(/env/);
    expect(() => parseKeySpec('t;expires=soon')).toThrow(/expires/);
    expect(() => parseKeySpec(';scopes=')).toThrow(/empty/);
  });

  it('authenticates only live keys, by exact bearer token', () => {
    const keys = new KeyRegistry([
      parseKeySpec('live'),
      parseKeySpec('old;expires=2020-01-01T00:00:00Z'),
      parseKeySpec('gone;revoked'),
    ]);
    const now = Date.UTC(2026, 0, 1);
    expect(keys.authenticate('Bearer live', now)?.token).toBe('live');
    expect(keys.authenticate('bearer live', now)?.token).toBe('live');
    expect(keys.authenticate('Bearer old', now)).toBeNull();
    expect(keys.authenticate('Bearer gone', now)).toBeNull();
    expect(keys.authenticate('Basic live', now)).toBeNull();
    expect(keys.authenticate(undefined, now)).toBeNull();
  });
});

describe('CLI flags and environment', () => {
  it('reads flags, repeatable keys, secrets and prices', () => {
    const options = parseEmulatorArgs(
      [
        '--port=0',
        '--api-key',
        'a',
        '--api-key',
        'b;scopes=read:companies',
        '--webhook-url',
        'http://127.0.0.1:9/h',
        '--webhook-secret',
        's1',
        '--webhook-secret',
        's2',
        '--window-seconds',
        '60',
        '--check-seconds',
        '0.5',
        '--price',
        'dossier=12000',
        '--price',
        'ai_deep=null',
        '--persons-daily-limit',
        '5',
      ],
      {},
    );
    expect(options).toMatchObject({
      port: 0,
      apiKeys: ['a', 'b;scopes=read:companies'],
      webhookUrl: 'http://127.0.0.1:9/h',
      webhookSecrets: ['s1', 's2'],
      windowSeconds: 60,
      checkSeconds: 0.5,
      prices: { dossier: 12000, ai_deep: null },
      limits: { personsPerDay: 5 },
    });
  });

  it('falls back to CPGW_EMULATOR_* variables; flags win', () => {
    const env = {
      CPGW_EMULATOR_PORT: '9911',
      CPGW_EMULATOR_HOST: '0.0.0.0',
      CPGW_EMULATOR_API_KEY: 'x y;env=sandbox',
      CPGW_EMULATOR_WEBHOOK_SECRET: 'one two',
      CPGW_EMULATOR_CHECK_WAIT_SECONDS: '2',
    };
    expect(parseEmulatorArgs([], env)).toMatchObject({
      port: 9911,
      host: '0.0.0.0',
      apiKeys: ['x', 'y;env=sandbox'],
      webhookSecrets: ['one', 'two'],
      checkWaitSeconds: 2,
    });
    expect(parseEmulatorArgs(['--port', '0'], env)).toMatchObject({ port: 0 });
  });

  it('reports bad values', () => {
    expect(() => parseEmulatorArgs(['--port', 'abc'], {})).toThrow(/--port/);
    expect(() => parseEmulatorArgs(['--price', 'lunch=1'], {})).toThrow(/--price/);
    expect(() => parseEmulatorArgs(['--bogus'], {})).toThrow();
    expect(parseEmulatorArgs(['--help'], {})).toBe('help');
  });

  it('validates options and lists every problem at once', () => {
    expect(() =>
      resolveConfig({ port: -1, windowSeconds: -5, prices: { dossier: 1.5 }, apiKeys: ['t;env=x'] }),
    ).toThrow(/port[\s\S]*env[\s\S]*dossier|env[\s\S]*dossier[\s\S]*port/);
    const config = resolveConfig({});
    expect(config).toMatchObject({
      windowMs: 900_000,
      checkMs: 25_000,
      checkWaitMs: 10_000,
      priceLagMs: 3000,
    });
    expect(config.webhookRetryDelaysMs).toEqual([0, 60_000, 300_000, 900_000, 3_600_000]);
  });
});
