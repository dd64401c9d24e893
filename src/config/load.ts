// Loads the configuration: YAML file(s), then CPGW_* environment overrides, then validation
// against schema.ts. Every problem is collected and reported at once, each naming the
// offending key (and the env variable when it came from one). Never logs secret values.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import {
  configSchema,
  crossFieldProblems,
  ENV_OVERRIDES,
  type GatewayConfig,
  SECRET_ENV,
  type WebhookSecrets,
  webhookSecretsFromEnv,
} from './schema.ts';

export interface LoadedConfig {
  config: GatewayConfig;
  /** From CPGW_UPSTREAM_API_KEY only; null means demo mode (embedded emulator). */
  upstreamApiKey: string | null;
  /** From CPGW_UPSTREAM_WEBHOOK_SECRETS and CPGW_WEBHOOK_SECRET_<APP> only. */
  webhookSecrets: WebhookSecrets;
  /** Files read, in order. */
  sources: string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`,
    );
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === undefined || next === null || typeof next !== 'object') node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function readFile(file: string, problems: string[]): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    problems.push(`${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    return {};
  }
  try {
    const doc = parseYaml(text) as unknown;
    if (doc === null || doc === undefined) return {};
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      problems.push(`${file}: the top level must be a mapping`);
      return {};
    }
    return doc as Record<string, unknown>;
  } catch (err) {
    problems.push(`${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
    return {};
  }
}

/** Whether a URL-looking value carries a password (user:password@host). */
function hasPassword(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  if (/[?&]password=/i.test(value)) return true;
  try {
    return new URL(value).password !== '';
  } catch {
    return /:\/\/[^/@]*:[^/@]*@/.test(value);
  }
}

/** Files: explicit list, else CPGW_CONFIG (comma-separated), else none (embedded defaults). */
export function loadConfig(options: { files?: string[]; env?: Env } = {}): LoadedConfig {
  const env = options.env ?? process.env;
  const files = options.files?.length
    ? options.files
    : (env.CPGW_CONFIG ?? '')
        .split(',')
        .map((f) => f.trim())
        .filter(Boolean);
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};
  for (const file of files) {
    const doc = readFile(file, problems);
    const upstream = doc.upstream as Record<string, unknown> | undefined;
    if (upstream && typeof upstream === 'object' && ('apiKey' in upstream || 'api_key' in upstream)) {
      problems.push(
        `${file}: upstream.apiKey must not be in a file; set ${SECRET_ENV.upstreamApiKey} in the environment`,
      );
      delete upstream.apiKey;
      delete upstream.api_key;
    }
    const store = doc.store as Record<string, unknown> | undefined;
    if (store && typeof store === 'object' && hasPassword(store.postgresUrl)) {
      problems.push(
        `${file}: store.postgresUrl must not carry a password in a file; set CPGW_POSTGRES_URL (or PGPASSWORD) in the environment`,
      );
      delete store.postgresUrl;
    }
    for (const [key, value] of Object.entries(doc)) {
      const existing = raw[key];
      raw[key] =
        existing &&
        typeof existing === 'object' &&
        !Array.isArray(existing) &&
        value &&
        typeof value === 'object' &&
        !Array.isArray(value)
          ? { ...existing, ...value }
          : value;
    }
  }
  const envSource = new Map<string, string>();
  for (const { env: name, path, type } of ENV_OVERRIDES) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    envSource.set(path.join('.'), name);
    if (type === 'int') {
      if (!/^-?\d+$/.test(value.trim())) {
        problems.push(`${path.join('.')} (from ${name}): must be an integer, got "${value}"`);
        continue;
      }
      setPath(raw, path, Number(value));
    } else if (type === 'bool') {
      if (!/^(true|false|1|0)$/i.test(value.trim())) {
        problems.push(`${path.join('.')} (from ${name}): must be true or false, got "${value}"`);
        continue;
      }
      setPath(raw, path, /^(true|1)$/i.test(value.trim()));
    } else if (type === 'list') {
      setPath(
        raw,
        path,
        value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean),
      );
    } else {
      setPath(raw, path, value);
    }
  }
  problems.push(...crossFieldProblems(raw));
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.join('.');
      const keys =
        issue.code === 'unrecognized_keys'
          ? ` (${issue.keys.map((k) => (path ? `${path}.${k}` : k)).join(', ')})`
          : '';
      const from = envSource.get(path);
      problems.push(`${path || '(top level)'}${from ? ` (from ${from})` : ''}: ${issue.message}${keys}`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  const key = env[SECRET_ENV.upstreamApiKey];
  return {
    config: parsed.data!,
    upstreamApiKey: key?.trim() ? key.trim() : null,
    webhookSecrets: webhookSecretsFromEnv(env, parsed.data!.apps),
    sources: files,
  };
}
