// deploy/kubernetes/ applies cleanly and starts pods (issues #16, 31): no cluster runs here, so
// this renders the example overlay with the real `kubectl kustomize` and proves what it can from
// the result: the config files in the ConfigMap pass `cpgw check-config` with the environment
// the pod gets (so pods would start), names and selectors meet, the probes name /livez and
// /readyz, the shutdown budget covers the drain and the grace, the pod is locked down (non-root,
// read-only root, no capabilities, RuntimeDefault seccomp, no privilege escalation, requests and
// limits), the ServiceMonitor scrapes the metrics listener, the config rolls the pods (a hashed
// ConfigMap name), and the Secret is referenced, never rendered (an example file outside every
// kustomization). Without kubectl the test is skipped loudly, unless REQUIRE_KUBECTL=1, where it fails.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { configSchema, ENV_OVERRIDES, SECRET_ENV } from '../../src/config/schema.ts';
import { envWithoutCpgw } from '../helpers/child-process.ts';
import { imageCommand } from '../helpers/image-command.ts';

const ROOT = join(import.meta.dirname, '../../deploy/kubernetes');
const OVERLAY = join(ROOT, 'overlays/example');

// biome-ignore lint/suspicious/noExplicitAny: manifests are free-form YAML read for checks
type Doc = Record<string, any>;

const kubectl = spawnSync('kubectl', ['version', '--client'], { stdio: 'ignore' }).status === 0;
if (!kubectl) {
  const message = 'kubernetes-manifests: no `kubectl`; the overlay is not rendered, test SKIPPED';
  if (process.env.REQUIRE_KUBECTL === '1') throw new Error(`${message} but REQUIRE_KUBECTL=1`);
  console.warn(`\n*** ${message} ***\n`);
}

function render(dir: string): Doc[] {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`kubectl kustomize ${dir}: ${r.stderr}`);
  return parseAllDocuments(r.stdout).map((d) => d.toJS() as Doc);
}

const docs: Doc[] = kubectl ? render(OVERLAY) : [];
const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
const dir = mkdtempSync(join(tmpdir(), 'cpgw-k8s-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!kubectl)('deploy/kubernetes/overlays/example, rendered by kubectl kustomize', () => {
  const deployment = byKind('Deployment')[0]!;
  const pod = deployment?.spec.template.spec;
  const container = pod?.containers[0];
  const env = Object.fromEntries((container?.env ?? []).map((e: Doc) => [e.name, e]));
  const configMap = byKind('ConfigMap')[0]!;
  const service = (name: string) => byKind('Service').find((s) => s.metadata.name === name)!;

  it('holds a Deployment, two Services (apps, metrics), a ConfigMap, a PDB and a ServiceMonitor; no Secret', () => {
    const kinds = docs.map((d) => d.kind).sort();
    expect(kinds).toEqual([
      'ConfigMap',
      'Deployment',
      'PodDisruptionBudget',
      'Service',
      'Service',
      'ServiceMonitor',
    ]);
    expect(byKind('Secret')).toEqual([]);
  });

  it('the Secret is an example file outside every kustomization, with every key the pod references', () => {
    const kustomizations = [join(ROOT, 'base'), OVERLAY].map((d) =>
      readFileSync(join(d, 'kustomization.yaml'), 'utf8'),
    );
    for (const k of kustomizations) expect(k).not.toMatch(/^\s*-\s*secret/m);
    expect(readdirSync(join(ROOT, 'base')).filter((f) => /secret/i.test(f))).toEqual(['secret.example.yaml']);
    const example = parse(readFileSync(join(ROOT, 'base/secret.example.yaml'), 'utf8')) as Doc;
    expect(example.kind).toBe('Secret');
    const referenced = (container.env as Doc[])
      .filter((e) => e.valueFrom?.secretKeyRef)
      .map((e) => e.valueFrom.secretKeyRef as { name: string; key: string; optional?: boolean });
    for (const ref of referenced) {
      expect(ref.name).toBe(example.metadata.name);
      expect(Object.keys(example.stringData), ref.key).toContain(ref.key);
    }
    expect(Object.keys(example.stringData).sort()).toEqual(referenced.map((r) => r.key).sort());
    // Only the upstream key is required; PostgreSQL (the money store) is optional.
    expect(referenced.filter((r) => !r.optional).map((r) => r.key)).toEqual([SECRET_ENV.upstreamApiKey]);
    expect(env.CPGW_POSTGRES_URL.valueFrom.secretKeyRef).toEqual({
      name: example.metadata.name,
      key: 'postgres-url',
      optional: true,
    });
  });

  it('every environment variable is one the gateway reads (CPGW_POSTGRES_URL: the PostgreSQL store)', () => {
    const known = new Set<string>([
      'CPGW_CONFIG',
      'CPGW_POSTGRES_URL',
      ...ENV_OVERRIDES.map((o) => o.env),
      ...Object.values(SECRET_ENV),
    ]);
    for (const name of Object.keys(env)) expect(known.has(name), name).toBe(true);
  });

  it("the ConfigMap's files pass `cpgw check-config` with the pod's environment, and match the pod", () => {
    const mounts = Object.fromEntries(container.volumeMounts.map((m: Doc) => [m.name, m.mountPath]));
    const files = (env.CPGW_CONFIG.value as string).split(',');
    expect(files.length).toBeGreaterThan(0);
    const local: string[] = [];
    for (const file of files) {
      expect(file.startsWith(`${mounts.config}/`), file).toBe(true);
      const key = file.slice(mounts.config.length + 1);
      expect(Object.keys(configMap.data), key).toContain(key);
      const path = join(dir, key);
      writeFileSync(path, configMap.data[key]);
      local.push(path);
    }
    const literal = Object.fromEntries(
      Object.entries(env)
        .filter(([name, e]) => name !== 'CPGW_CONFIG' && typeof (e as Doc).value === 'string')
        .map(([name, e]) => [name, (e as Doc).value as string]),
    );
    const check = spawnSync(
      'node',
      ['bin/cpgw.js', 'check-config', ...local.flatMap((f) => ['--config', f])],
      {
        env: envWithoutCpgw({ ...literal, [SECRET_ENV.upstreamApiKey]: 'from-the-secret' }),
        encoding: 'utf8',
      },
    );
    expect({ status: check.status, stderr: check.stderr }).toEqual({ status: 0, stderr: '' });
    expect(check.stdout).toMatch(/^ {2}apps: example$/m);
    expect(check.stdout).toContain('(key from CPGW_UPSTREAM_API_KEY)');

    // The same files, parsed: the ports, the replicas and the drain meet the manifests.
    const raw: Record<string, unknown> = {};
    for (const f of local) Object.assign(raw, parse(readFileSync(f, 'utf8')));
    const config = configSchema.parse(raw);
    const port = (name: string) => container.ports.find((p: Doc) => p.name === name).containerPort;
    expect(config.server.port).toBe(port('http'));
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.metrics.port).toBe(port('metrics'));
    expect(config.metrics.host).toBe('0.0.0.0');
    expect(config.limits.expectedReplicas).toBe(deployment.spec.replicas);
    expect(env.CPGW_STATE_DIR.value).toBe(mounts.state);
    const volumes = Object.fromEntries(pod.volumes.map((v: Doc) => [v.name, v]));
    expect(volumes.config.configMap.name).toBe(configMap.metadata.name);
    expect(volumes.state.emptyDir).toEqual({});

    // The shutdown budget covers the drain (readiness goes 503 first) and the graceful close.
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      config.server.drainDelayMs + config.server.shutdownGraceMs,
    );
    const probe = container.readinessProbe;
    expect(config.server.drainDelayMs).toBeGreaterThanOrEqual(
      probe.periodSeconds * probe.failureThreshold * 1000,
    );
    expect(container.lifecycle?.preStop).toBeUndefined();
  });

  it('config changes roll the pods: the ConfigMap name carries its content hash, no kill binary needed', () => {
    expect(configMap.metadata.name).toMatch(/^cpgw-config-[a-z0-9]{10}$/);
    const changed = mkdtempSync(join(dir, 'overlay-'));
    writeFileSync(
      join(changed, 'kustomization.yaml'),
      readFileSync(join(OVERLAY, 'kustomization.yaml'), 'utf8').replace(
        '../../base',
        relative(changed, join(ROOT, 'base')),
      ),
    );
    writeFileSync(
      join(changed, 'apps.yaml'),
      readFileSync(join(OVERLAY, 'apps.yaml'), 'utf8').replace('read:checks]', 'read:checks, read:persons]'),
    );
    const other = render(changed);
    const name = other.find((d) => d.kind === 'ConfigMap')!.metadata.name;
    expect(name).not.toBe(configMap.metadata.name);
    const otherPod = other.find((d) => d.kind === 'Deployment')!.spec.template.spec;
    expect(otherPod.volumes.find((v: Doc) => v.name === 'config').configMap.name).toBe(name);
    expect(JSON.stringify(docs)).not.toMatch(/\bkill\b/);
  });

  it('the pod is locked down: non-root, read-only root, all capabilities dropped, RuntimeDefault seccomp', () => {
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container.securityContext.capabilities.add).toBeUndefined();
    expect(container.securityContext.privileged).toBeUndefined();
    for (const kind of ['requests', 'limits'])
      for (const resource of ['cpu', 'memory'])
        expect(container.resources[kind]?.[resource], `${kind}.${resource}`).toBeDefined();
    // The image's own command (node's flags included), not a second copy that drifts.
    expect(container.args).toEqual(imageCommand());
    expect(container.args.slice(-2)).toEqual(['bin/cpgw.js', 'start']);
    expect(container.image).toMatch(/^counterparty-gateway:\S+$/);
  });

  it('probes: liveness /livez, readiness /readyz, on the main port', () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: '/livez', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
  });

  it('selectors meet: the Services and the PDB pick the pods; the PDB leaves room to drain one', () => {
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    const apps = service('cpgw');
    expect(apps.spec.selector).toEqual(labels);
    // The apps' Service carries the main port only; the metrics listener has its own.
    expect(apps.spec.ports.map((p: Doc) => p.targetPort)).toEqual(['http']);
    const pdb = byKind('PodDisruptionBudget')[0]!;
    expect(pdb.spec.selector.matchLabels).toEqual(labels);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('the ServiceMonitor scrapes /metrics on the metrics listener port through the metrics Service', () => {
    const monitor = byKind('ServiceMonitor')[0]!;
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    const metrics = service('cpgw-metrics');
    for (const [k, v] of Object.entries(monitor.spec.selector.matchLabels))
      expect(metrics.metadata.labels[k], k).toBe(v);
    expect(service('cpgw').metadata.labels['app.kubernetes.io/component']).toBeUndefined();
    expect(metrics.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    const endpoint = monitor.spec.endpoints[0];
    expect(endpoint.path).toBe('/metrics');
    const port = metrics.spec.ports.find((p: Doc) => p.name === endpoint.port);
    expect(port.targetPort).toBe('metrics');
    expect(container.ports.find((p: Doc) => p.name === 'metrics').containerPort).toBe(9464);
  });
});

describe.skipIf(!kubectl)(
  'deploy/kubernetes/postgres (the money record), rendered by kubectl kustomize',
  () => {
    const pg = kubectl ? render(join(ROOT, 'postgres')) : [];
    const set = pg.find((d) => d.kind === 'StatefulSet')!;
    const spec = set?.spec.template.spec;
    const container = spec?.containers[0];

    it('one PostgreSQL on a persistent volume, behind the Service the example postgres-url names', () => {
      expect(pg.map((d) => d.kind).sort()).toEqual(['Service', 'StatefulSet']);
      expect(set.spec.volumeClaimTemplates[0].spec.accessModes).toEqual(['ReadWriteOnce']);
      const svc = pg.find((d) => d.kind === 'Service')!;
      expect(svc.spec.selector).toEqual(set.spec.template.metadata.labels);
      const example = parse(readFileSync(join(ROOT, 'base/secret.example.yaml'), 'utf8')) as Doc;
      const url = new URL(example.stringData['postgres-url']);
      expect(url.hostname).toBe(svc.metadata.name);
      expect(Number(url.port)).toBe(svc.spec.ports[0].port);
      const env = Object.fromEntries(container.env.map((e: Doc) => [e.name, e]));
      expect(url.username).toBe(env.POSTGRES_USER.value);
      expect(url.pathname).toBe(`/${env.POSTGRES_DB.value}`);
      // the password from a Secret, never in the manifest
      expect(env.POSTGRES_PASSWORD.valueFrom.secretKeyRef.name).toBe('cpgw-postgres');
    });

    it('is locked down like the gateway: non-root, read-only root, no capabilities, RuntimeDefault', () => {
      expect(spec.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(container.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      const mounts = container.volumeMounts.map((m: Doc) => m.mountPath).sort();
      expect(mounts).toEqual(['/tmp', '/var/lib/postgresql/data', '/var/run/postgresql']);
      for (const kind of ['requests', 'limits'])
        for (const resource of ['cpu', 'memory']) expect(container.resources[kind][resource]).toBeDefined();
    });
  },
);
