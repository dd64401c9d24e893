// Admin token rotation (issue #16): while admin.previousTokenHash is set, both the new and the
// previous admin token open the admin API; any other token is 401; apps' tokens never are admin.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningGateway, startGateway } from '../../src/main.ts';

describe('admin token rotation', () => {
  const current = newToken();
  const previous = newToken();
  let gw: RunningGateway;
  // Its own money file (store.stateDir): test files run in parallel, and one process owns a file.
  const state = mkdtempSync(join(tmpdir(), 'cpgw-state-'));
  beforeAll(async () => {
    gw = await startGateway({
      // Demo mode (no upstream key): the bundled emulator as upstream, a demo app.
      env: {
        CPGW_PORT: '0',
        CPGW_STATE_DIR: state,
        CPGW_ADMIN_TOKEN_HASH: tokenHash(current),
        CPGW_ADMIN_PREVIOUS_TOKEN_HASH: tokenHash(previous),
      },
      logger: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(state, { recursive: true, force: true });
  });

  const admin = (token: string) =>
    fetch(`${gw.url}/admin/budgets`, { headers: { authorization: `Bearer ${token}` } });

  it('accepts the new and the previous admin token', async () => {
    expect((await admin(current)).status).toBe(200);
    expect((await admin(previous)).status).toBe(200);
  });

  it('refuses any other token, the demo app token included', async () => {
    expect((await admin(newToken())).status).toBe(401);
    expect((await admin(gw.demoToken!)).status).toBe(401);
  });
});
