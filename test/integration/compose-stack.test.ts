// compose.yaml with no container engine: what can be proven here is. Every file a service mounts
// exists; every cpgw service runs a real cpgw command; Prometheus scrapes every gateway service;
// and the stack's own commands run directly: the emulator and both gateways exactly as compose
// starts them (its environment, deploy/gateway.yaml, ports and hosts mapped to this machine,
// Redis from test/helpers/redis.ts), behind nginx with deploy/nginx/nginx.conf when nginx is
// installed, answering the demo tokens the config publishes.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.ts';
import { envWithoutCpgw, waitForOutput } from '../helpers/child-process.ts';
import { cpgwArgs, imageCommand } from '../helpers/image-command.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { deleteKeysUnder, freePort, startTestRedis, type TestRedis, uniquePrefix } from '../helpers/redis.ts';

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
}
const compose = parse(readFileSync('compose.yaml', 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const services = compose.services;
const cpgwServices = Object.entries(services).filter(([, s]) => s.image === 'counterparty-gateway:local');
const gatewayNames = cpgwServices.filter(([, s]) => cpgwArgs(s.command ?? [])[0] === 'start').map(([n]) => n);
const demoToken = (name: string) =>
  new RegExp(`^#\\s+${name}\\s+(cpgw_\\S+)`, 'm').exec(readFileSync('deploy/gateway.yaml', 'utf8'))![1]!;

describe('compose.yaml', () => {
  it('mounts only files and named volumes that exist', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(source), `${name} mounts ${source}`).toBe(true);
        else expect(Object.keys(compose.volumes ?? {}), `${name}'s volume ${source}`).toContain(source);
      }
    }
  });

  it('runs real cpgw commands: 2+ gateway replicas, one emulator, one published port in front', () => {
    for (const [name, service] of cpgwServices) {
      expect(service.command?.[0], name).toBe('node');
      const sub = cpgwArgs(service.command ?? [])[0];
      expect(['start', 'emulator'], name).toContain(sub);
      const help = spawnSync('node', ['bin/cpgw.js', sub!, '--help'], { encoding: 'utf8' });
      expect(help.status, `${name}: cpgw ${sub} --help`).toBe(0);
    }
    expect(gatewayNames.length).toBeGreaterThanOrEqual(2);
    // The gateways run the image's own command (node's flags included).
    for (const name of gatewayNames) expect(services[name]!.command, name).toEqual(imageCommand());
    for (const name of gatewayNames)
      expect(services[name]!.ports, `${name} is reached through lb`).toBeUndefined();
    expect(services.lb!.ports).toEqual(['8080:8080']);
    const nginx = readFileSync('deploy/nginx/nginx.conf', 'utf8');
    for (const name of gatewayNames) expect(nginx).toContain(`server ${name}:8080`);
    const prometheus = parse(readFileSync('deploy/prometheus/prometheus.yml', 'utf8')) as {
      scrape_configs: Array<{ static_configs: Array<{ targets: string[] }> }>;
    };
    // Prometheus scrapes the metrics listener, which compose opens to its network only.
    for (const name of gatewayNames) {
      expect(services[name]!.environment).toMatchObject({
        CPGW_METRICS_HOST: '0.0.0.0',
        CPGW_METRICS_PORT: '9464',
      });
    }
    expect(prometheus.scrape_configs[0]!.static_configs[0]!.targets.sort()).toEqual(
      gatewayNames.map((n) => `${n}:9464`).sort(),
    );
    expect(services.redis!.command).toContain('--appendonly');
    expect(services.redis!.volumes).toEqual(['redis-data:/data']);
  });

  it('deploy/gateway.yaml is valid with the environment compose gives the gateways', () => {
    const env = { ...services[gatewayNames[0]!]!.environment };
    const { config, upstreamApiKey } = loadConfig({ files: ['deploy/gateway.yaml'], env });
    expect(upstreamApiKey).toBe('compose-upstream-key');
    expect(config.apps.map((a) => a.name)).toEqual(['demo-crm', 'demo-risk']);
    expect(config.store.redisUrl).toBe('redis://redis:6379/0');
    // Money on the postgres service; its password only from deploy/postgres.env (PGPASSWORD).
    expect(config.store.postgresUrl).toBe('postgres://cpgw@postgres:5432/cpgw');
    expect(readFileSync('deploy/postgres.env', 'utf8')).toMatch(/^PGPASSWORD=\S+$/m);
    expect(services.postgres!.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(config.store.stateDir).toBe('/var/lib/cpgw');
  });
});

describe('the stack, run directly', () => {
  const children: ChildProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-compose-'));
  const prefix = uniquePrefix('compose');
  let redis: TestRedis | null = null;
  let money: TestDatabase | null = null;
  const urls: string[] = [];
  const metricsUrls: string[] = [];
  let lb: string | null = null;

  const run = async (args: string[], env: NodeJS.ProcessEnv, ready: RegExp, bin = 'node') => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    await waitForOutput(child, ready);
    return child;
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    if (!redis) return;
    money = await createTestDatabase('compose');
    const emulatorPort = await freePort();
    const emu = services
      .emulator!.command!.slice(1)
      .map((a) => (a === '8790' ? String(emulatorPort) : a === '0.0.0.0' ? '127.0.0.1' : a));
    await run(emu, envWithoutCpgw(), /listening|http:\/\//);
    const ports: number[] = [];
    for (const name of gatewayNames) {
      const port = await freePort();
      const metricsPort = await freePort();
      ports.push(port);
      const env = envWithoutCpgw({
        ...services[name]!.environment,
        CPGW_CONFIG: 'deploy/gateway.yaml',
        CPGW_REDIS_URL: redis.url,
        // The postgres service as a database of this machine's PostgreSQL ('' without one: money on Redis).
        CPGW_POSTGRES_URL: money?.url ?? '',
        CPGW_STORE_PREFIX: prefix,
        CPGW_UPSTREAM_URL: `http://127.0.0.1:${emulatorPort}`,
        CPGW_STATE_DIR: join(dir, name),
        CPGW_HOST: '127.0.0.1',
        CPGW_PORT: String(port),
        CPGW_METRICS_HOST: '127.0.0.1',
        CPGW_METRICS_PORT: String(metricsPort),
        CPGW_LOG_LEVEL: 'warn',
      });
      await run(services[name]!.command!.slice(1), env, /listening on http/);
      urls.push(`http://127.0.0.1:${port}`);
      metricsUrls.push(`http://127.0.0.1:${metricsPort}/metrics`);
    }
    if (spawnSync('nginx', ['-v']).status === 0) {
      const lbPort = await freePort();
      let conf = readFileSync('deploy/nginx/nginx.conf', 'utf8')
        .replace('listen 8080;', `listen 127.0.0.1:${lbPort};`)
        .replace(
          'pid /tmp/nginx.pid;',
          `pid ${join(dir, 'nginx.pid')};\nerror_log ${join(dir, 'nginx.log')};`,
        );
      for (const [i, name] of gatewayNames.entries())
        conf = conf.replace(`server ${name}:8080`, `server 127.0.0.1:${ports[i]}`);
      const file = join(dir, 'nginx.conf');
      writeFileSync(file, conf);
      const check = spawnSync('nginx', ['-t', '-p', dir, '-c', file], { encoding: 'utf8' });
      expect(check.status, check.stderr).toBe(0);
      const nginx = spawn('nginx', ['-p', dir, '-c', file, '-g', 'daemon off;'], { stdio: 'ignore' });
      children.push(nginx);
      lb = `http://127.0.0.1:${lbPort}`;
      const deadline = Date.now() + 5_000;
      while (
        !(await fetch(`${lb}/healthz`).then(
          (r) => r.ok,
          () => false,
        )) &&
        Date.now() < deadline
      )
        await new Promise((r) => setTimeout(r, 50));
    } else if (process.env.REQUIRE_NGINX === '1') throw new Error('REQUIRE_NGINX=1 but nginx is missing');
    else console.warn('\n!!! NO nginx: the load balancer config is not exercised !!!\n');
  }, 60_000);

  afterAll(async () => {
    // Each child gets SIGTERM and, on a loaded machine that stalls it, SIGKILL after 10 s: the
    // hook always ends inside its timeout and never leaves a process behind (issue 31 item 9).
    for (const child of children.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    await money?.drop();
    if (redis) {
      await deleteKeysUnder(redis.url, [prefix]);
      await redis.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  it('both gateways answer the demo tokens; through the load balancer a company read is cached for every replica', async (ctx) => {
    if (!redis) ctx.skip();
    const crm = { authorization: `Bearer ${demoToken('demo-crm')}` };
    for (const url of urls) expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const front = lb ?? urls[0]!;
    const first = await fetch(`${front}/v1/companies/7707083893`, { headers: crm });
    expect(first.status).toBe(200);
    await first.arrayBuffer();
    // A paid read whose window covers its re-read is stored just after its answer
    // (stages/cache.ts): a read in between goes upstream inside that window, charged 0; once the
    // write has landed every replica answers it from the shared cache.
    for (const url of urls) {
      let cache: string | null = null;
      for (let i = 0; i < 50 && cache !== 'HIT'; i++) {
        const again = await fetch(`${url}/v1/companies/7707083893`, { headers: crm });
        await again.arrayBuffer();
        expect(again.headers.get('x-charged-minor')).toBe('0');
        cache = again.headers.get('x-cache');
        if (cache !== 'HIT') await new Promise((r) => setTimeout(r, 20));
      }
      expect(cache).toBe('HIT');
    }
    const admin = await fetch(`${front}/admin/apps`, {
      headers: { authorization: `Bearer ${demoToken('admin')}` },
    });
    expect(admin.status).toBe(200);
    const risk = await fetch(`${front}/v1/companies/7707083893`, {
      headers: { authorization: `Bearer ${demoToken('demo-risk')}` },
    });
    expect(risk.status).toBe(200);
    // What Prometheus scrapes: each replica's metrics listener; the public side refuses it.
    for (const url of metricsUrls) expect(await (await fetch(url)).text()).toMatch(/^cpgw_requests_total\{/m);
    expect((await fetch(`${front}/metrics`)).status).toBe(401);
  });

  it("a check's poll_url keeps the host and port the app used, through the load balancer", async (ctx) => {
    if (!redis || !lb) ctx.skip();
    const created = await fetch(`${lb}/v1/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demoToken('demo-crm')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inn: '7707083893' }),
    });
    expect([200, 202]).toContain(created.status);
    const ticket = (await created.json()) as { check_id: string; poll_url?: string };
    if (created.status === 202) expect(ticket.poll_url).toBe(`${lb}/v1/checks/${ticket.check_id}`);
    const doc = (await (
      await fetch(`${lb}/v1/openapi.json`, {
        headers: { authorization: `Bearer ${demoToken('demo-crm')}` },
      })
    ).json()) as { servers?: Array<{ url: string }> };
    expect(doc.servers?.[0]?.url).toBe(lb);
  });
});
