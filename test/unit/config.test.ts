import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.ts';

const fixture = (name: string) => `test/fixtures/config/${name}`;

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('starts from embedded defaults with no file and no environment', () => {
    const { config, upstreamApiKey } = loadConfig({ files: [], env: {} });
    expect(config.server.port).toBe(8080);
    expect(config.upstream.timeoutMs).toBe(15_000);
    expect(config.upstream.checkTimeoutMs).toBe(30_000);
    expect(config.store.redisUrl).toBeNull();
    expect(config.apps).toEqual([]);
    expect(upstreamApiKey).toBeNull();
  });

  it('loads the annotated example unchanged', () => {
    const { config } = loadConfig({ files: ['config/gateway.example.yaml'], env: {} });
    expect(config.apps.map((a) => a.name)).toEqual(['crm', 'compliance']);
    expect(config.apps[0]!.limits).toEqual({ weight: 2, priority: 0, caps: { search: 5 } });
    expect(config.apps[1]!.limits).toEqual({ weight: 1, priority: 0, caps: {} });
    expect(config.limits.search).toEqual({ limit: 20, windowMs: 60_000, burst: 1, maxWaitMs: 10_000 });
    expect(config.limits.key?.limit).toBeUndefined(); // left to follow X-RateLimit-Limit
  });

  it('reports every problem of a bad file at once, each naming its key', () => {
    const problems = problemsOf(() => loadConfig({ files: [fixture('bad-many.yaml')], env: {} }));
    const text = problems.join('\n');
    expect(text).toContain('upstream.apiKey must not be in a file');
    expect(text).toMatch(/server\.port: /);
    expect(text).toMatch(/server.*colour/);
    expect(text).toMatch(/upstream\.url: /);
    expect(text).toMatch(/store\.redisUrl: /);
    expect(text).toMatch(/apps\.0\.name: /);
    expect(text).toMatch(/apps\.0\.tokenHash: /);
    expect(text).toMatch(/apps\.0\.scopes\.0: /);
    expect(text).toMatch(/apps\.2\.name: duplicate app name/);
    expect(text).toMatch(/apps\.2\.tokenHash: same token/);
    expect(problems.length).toBeGreaterThanOrEqual(10);
    expect(text).not.toContain('sk-live-should-never-be-in-a-file');
  });

  it('reports YAML syntax errors and a non-mapping top level', () => {
    expect(problemsOf(() => loadConfig({ files: [fixture('bad-yaml.yaml')], env: {} }))[0]).toMatch(
      /not valid YAML/,
    );
    expect(problemsOf(() => loadConfig({ files: [fixture('bad-top-level.yaml')], env: {} }))[0]).toMatch(
      /top level must be a mapping/,
    );
    expect(problemsOf(() => loadConfig({ files: [fixture('missing.yaml')], env: {} }))[0]).toMatch(
      /cannot read/,
    );
  });

  it('applies CPGW_* overrides and names the variable in problems', () => {
    const { config, upstreamApiKey } = loadConfig({
      files: [fixture('good-minimal.yaml')],
      env: { CPGW_PORT: '9090', CPGW_REDIS_URL: 'redis://127.0.0.1:6379', CPGW_UPSTREAM_API_KEY: ' key-1 ' },
    });
    expect(config.server.port).toBe(9090);
    expect(config.store.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(upstreamApiKey).toBe('key-1');
    const problems = problemsOf(() =>
      loadConfig({ files: [], env: { CPGW_PORT: 'eighty', CPGW_LOG_LEVEL: 'loud' } }),
    );
    expect(problems.join('\n')).toMatch(/server\.port \(from CPGW_PORT\): must be an integer/);
    expect(problems.join('\n')).toMatch(/log\.level \(from CPGW_LOG_LEVEL\)/);
  });

  it('reads files from CPGW_CONFIG', () => {
    const { config, sources } = loadConfig({ env: { CPGW_CONFIG: fixture('good-minimal.yaml') } });
    expect(sources).toEqual([fixture('good-minimal.yaml')]);
    expect(config.apps[0]?.name).toBe('crm');
  });
});
