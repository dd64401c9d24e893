// deploy/kubernetes/ stays consistent with the gateway (issue #16): no cluster runs here, so this
// proves what it can from the files: every manifest parses, names and selectors meet, probes and
// the shutdown budget match the gateway's endpoints and grace, the ConfigMap's file is a valid
// gateway config listening on the container port, and every Secret key is a variable the
// gateway reads.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { configSchema, ENV_OVERRIDES, SECRET_ENV } from '../../src/config/schema.ts';

const DIR = join(import.meta.dirname, '../../deploy/kubernetes');

// biome-ignore lint/suspicious/noExplicitAny: manifests are free-form YAML read for checks
type Doc = Record<string, any>;

const docs: Doc[] = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(join(DIR, f), 'utf8')).map((d) => d.toJS() as Doc));
const byKind = (kind: string) => docs.filter((d) => d.kind === kind);

describe('deploy/kubernetes', () => {
  const deployment = byKind('Deployment')[0]!;
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];

  it('holds a Deployment, Service, ConfigMap, Secret and PodDisruptionBudget', () => {
    for (const kind of ['Deployment', 'Service', 'ConfigMap', 'Secret', 'PodDisruptionBudget'])
      expect(byKind(kind), kind).toHaveLength(1);
  });

  it('selectors of the Service and the PDB pick the pods; the PDB leaves room to drain one', () => {
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    expect(byKind('Service')[0]!.spec.selector).toEqual(labels);
    const pdb = byKind('PodDisruptionBudget')[0]!;
    expect(pdb.spec.selector.matchLabels).toEqual(labels);
    expect(pdb.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });

  it('probes name the gateway endpoints on the container port; the Service targets it', () => {
    const port = container.ports.find((p: Doc) => p.name === 'http');
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(byKind('Service')[0]!.spec.ports[0].targetPort).toBe('http');
    const gatewayFile = byKind('ConfigMap')[0]!.data['gateway.yaml'];
    const config = configSchema.parse(parseAllDocuments(gatewayFile)[0]!.toJS());
    expect(config.server.port).toBe(port.containerPort);
    expect(config.server.host).toBe('0.0.0.0');
    expect(config.limits.expectedReplicas).toBe(deployment.spec.replicas);
  });

  it('the shutdown budget covers the preStop pause and the graceful shutdown', () => {
    const pause = /setTimeout\(\(\) => \{\}, (\d+)\)/.exec(
      container.lifecycle.preStop.exec.command.join(' '),
    );
    expect(pause).not.toBeNull();
    const defaults = configSchema.parse({});
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
      Number(pause![1]) + defaults.server.shutdownGraceMs,
    );
  });

  it('runs `cpgw start` on a read-only root with the config and the state dir mounted', () => {
    expect(container.args).toEqual(['node', 'bin/cpgw.js', 'start']);
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    const env = Object.fromEntries(container.env.map((e: Doc) => [e.name, e.value]));
    const mounts = Object.fromEntries(container.volumeMounts.map((m: Doc) => [m.name, m.mountPath]));
    expect(env.CPGW_CONFIG).toBe(`${mounts.config}/gateway.yaml`);
    expect(env.CPGW_STATE_DIR).toBe(mounts.state);
    const volumes = Object.fromEntries(pod.volumes.map((v: Doc) => [v.name, v]));
    expect(volumes.config.configMap.name).toBe(byKind('ConfigMap')[0]!.metadata.name);
  });

  it('every Secret key is an environment variable the gateway reads', () => {
    const secret = byKind('Secret')[0]!;
    expect(container.envFrom[0].secretRef.name).toBe(secret.metadata.name);
    const known = new Set<string>([...ENV_OVERRIDES.map((o) => o.env), ...Object.values(SECRET_ENV)]);
    for (const key of Object.keys(secret.stringData)) expect(known.has(key), key).toBe(true);
  });
});
