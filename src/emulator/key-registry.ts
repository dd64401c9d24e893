// The emulator's API keys: parses the compact key spec (docs/upstream-gaps.md, "Key spec")
// and authenticates bearer tokens. Unknown, revoked and expired keys are one answer
// (null); callers must never tell them apart in what they send back.

export const ALL_SCOPES = ['read:companies', 'read:checks', 'read:persons'] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export interface ApiKey {
  token: string;
  name: string;
  accountId: number;
  environment: 'production' | 'sandbox';
  scopes: string[];
  /** Epoch ms or null (no expiry). */
  expiresAt: number | null;
  revoked: boolean;
}

export const DEFAULT_KEY_SPEC = 'emulator-key';

/**
 * Parses `TOKEN[;attr=value]...`, attributes:
 * `name=NAME`, `account=N`, `env=production|sandbox`, `scopes=a+b` (empty = none),
 * `expires=ISO-8601`, `revoked` (or `revoked=true`).
 */
export function parseKeySpec(spec: string): ApiKey {
  const [token, ...attrs] = spec.split(';').map((part) => part.trim());
  if (!token) throw new Error(`key spec "${spec}": the token is empty`);
  const key: ApiKey = {
    token,
    name: token,
    accountId: 1,
    environment: 'production',
    scopes: [...ALL_SCOPES],
    expiresAt: null,
    revoked: false,
  };
  for (const attr of attrs) {
    if (!attr) continue;
    const eq = attr.indexOf('=');
    const name = eq < 0 ? attr : attr.slice(0, eq);
    const value = eq < 0 ? '' : attr.slice(eq + 1);
    switch (name) {
      case 'name':
        key.name = value;
        break;
      case 'account': {
        const id = Number(value);
        if (!Number.isSafeInteger(id) || id < 1)
          throw new Error(`key spec "${spec}": bad account "${value}"`);
        key.accountId = id;
        break;
      }
      case 'env':
        if (value !== 'production' && value !== 'sandbox') {
          throw new Error(`key spec "${spec}": env must be production or sandbox`);
        }
        key.environment = value;
        break;
      case 'scopes':
        key.scopes = value.split('+').filter(Boolean);
        break;
      case 'expires': {
        const at = Date.parse(value);
        if (Number.isNaN(at)) throw new Error(`key spec "${spec}": bad expires "${value}"`);
        key.expiresAt = at;
        break;
      }
      case 'revoked':
        key.revoked = value === '' || value === 'true';
        break;
      default:
        throw new Error(`key spec "${spec}": unknown attribute "${name}"`);
    }
  }
  return key;
}

export class KeyRegistry {
  private readonly byToken = new Map<string, ApiKey>();

  constructor(keys: ApiKey[]) {
    for (const key of keys) {
      if (this.byToken.has(key.token)) throw new Error(`duplicate API key token "${key.name}"`);
      this.byToken.set(key.token, key);
    }
  }

  /** The key for an Authorization header value, or null (unknown, revoked, expired, malformed). */
  authenticate(header: string | undefined, now: number): ApiKey | null {
    if (!header) return null;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) return null;
    const key = this.byToken.get(match[1]!);
    if (!key || key.revoked) return null;
    if (key.expiresAt !== null && key.expiresAt <= now) return null;
    return key;
  }

  get keys(): ApiKey[] {
    return [...this.byToken.values()];
  }
}
