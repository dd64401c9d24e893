// `npm start` without an upstream key (demo mode, the bundled emulator as upstream) hands apps
// the gateway's URLs, as with the real upstream: a check's 202 ticket said
// poll_url: http://127.0.0.1:<emulator port>/v1/checks/..., the emulator's address, because the
// gateway rewrote only the configured upstream's origin, not the emulator's. Real sockets.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { type RunningGateway, startGateway } from '../../src/main.ts';

describe('demo mode', () => {
  let gw: RunningGateway;
  // Its own money file (store.stateDir): test files run in parallel, and one process owns a file.
  const state = mkdtempSync(join(tmpdir(), 'cpgw-state-'));
  beforeAll(async () => {
    gw = await startGateway({
      env: { CPGW_PORT: '0', CPGW_STATE_DIR: state },
      logger: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(state, { recursive: true, force: true });
  });

  it("a check's ticket names the gateway, before and after a reload", async () => {
    for (const round of ['started', 'reloaded']) {
      if (round === 'reloaded') gw.reload();
      const res = await fetch(`${gw.url}/v1/check`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.demoToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ inn: '7707083893' }),
      });
      expect(res.status, round).toBe(202);
      const ticket = (await res.json()) as { check_id: string; poll_url: string };
      expect(ticket.poll_url, round).toBe(`${gw.url}/v1/checks/${ticket.check_id}`);
      const poll = await fetch(ticket.poll_url, { headers: { authorization: `Bearer ${gw.demoToken}` } });
      expect(poll.status, round).toBe(202);
    }
  });
});
