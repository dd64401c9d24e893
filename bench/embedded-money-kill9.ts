// Durability of the embedded money store (src/store/sqlite/) under kill -9, on whatever Node runs
// this script: a writer process opens a charge and records it (the gateway's two money steps)
// again and again, printing "ack N" only after recordCharge returned; the parent SIGKILLs it at a
// random moment, reopens the same money.db and checks that every acknowledged charge is in the
// ledger exactly once and that the spend counter equals the ledger (a charge committed but not
// yet acknowledged may be there too: never lost, never counted twice). Also reports the time of
// one open+record pair (two durable commits).
//   node bin/run-ts.js bench/embedded-money-kill9.ts [--rounds 20]   (writes bench/results/embedded-money-kill9.json)
// Node 24 as CI runs it: PATH=<dir of node 24>:$PATH node bin/run-ts.js bench/embedded-money-kill9.ts
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock, systemClock } from '../src/clock.ts';
import type { PendingCharge } from '../src/store/index.ts';
import { EmbeddedStore } from '../src/store/sqlite/embedded-store.ts';

const PRICE = 9900;
const COUNTERS = ['app:bench:day', 'global:day'];

async function writer(dir: string): Promise<void> {
  const store = new EmbeddedStore({ clock: systemClock, cacheMaxBytes: 1 << 20, stateDir: dir });
  for (let n = 0; ; n++) {
    const key = `k${n}`;
    const started = performance.now();
    const p: PendingCharge = {
      key,
      requestId: key,
      app: 'bench',
      operation: 'company',
      kind: 'dossier',
      inn: String(7707083893 + n),
      estimateMinor: PRICE,
      at: Date.now(),
      method: 'GET',
      target: `/v1/company/${n}`,
      body: null,
      opens: 'dossier',
      counters: COUNTERS,
      counterTtlMs: 86_400_000,
      owner: 'bench',
      leaseUntil: Date.now() + 10_000,
      reconcileAttempts: 0,
    };
    await store.openCharge(
      p,
      COUNTERS.map((key) => ({ key, limitMinor: null, ttlMs: 86_400_000 })),
    );
    await store.recordCharge({
      key,
      amountMinor: PRICE,
      entry: { at: Date.now(), app: 'bench', amountMinor: PRICE, idempotencyKey: key },
      counters: COUNTERS,
      counterTtlMs: 86_400_000,
    });
    process.stdout.write(`ack ${n} ${(performance.now() - started).toFixed(3)}\n`);
  }
}

async function round(
  dir: string,
  killAfterMs: number,
): Promise<{ acked: number; found: number; pairMs: number[] }> {
  const script = fileURLToPath(import.meta.url);
  const runTs = fileURLToPath(new URL('../bin/run-ts.js', import.meta.url));
  const child = spawn(process.execPath, [runTs, script, '--writer', dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let firstAck: (() => void) | null = null;
  const acked = new Promise<void>((r) => {
    firstAck = r;
  });
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('ack ')) firstAck?.();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await acked; // the writer runs: now let it go on for a random while
  await new Promise((r) => setTimeout(r, killAfterMs));
  child.kill('SIGKILL');
  await exited;
  const acks = out
    .split('\n')
    .filter((l) => l.startsWith('ack '))
    .map((l) => l.split(' '));
  const ackedKeys = new Set(acks.map((a) => `k${a[1]}`));

  const store = new EmbeddedStore({
    clock: new ManualClock(Date.now()),
    cacheMaxBytes: 1 << 20,
    stateDir: dir,
  });
  try {
    const ledger = await store.readLedger(0, Date.now() + 86_400_000, Number.MAX_SAFE_INTEGER);
    const keys = ledger.map((r) => String(r.idempotencyKey));
    if (new Set(keys).size !== keys.length) throw new Error('a charge is in the ledger twice');
    for (const k of ackedKeys) if (!keys.includes(k)) throw new Error(`acknowledged charge ${k} is lost`);
    if (keys.length > ackedKeys.size + 1)
      throw new Error(`${keys.length} in the ledger, ${ackedKeys.size} acked`);
    const [app] = await store.readCounters([COUNTERS[0]!]);
    if (app!.spentMinor !== keys.length * PRICE)
      throw new Error(`spend ${app!.spentMinor} != ledger ${keys.length * PRICE}`);
    const pending = await store.pendingCharges();
    if (pending.some((p) => keys.includes(p.key))) throw new Error('a recorded charge is still pending');
    // Clean slate for the next round: the file stays, its contents are checked cumulatively.
    return { acked: ackedKeys.size, found: keys.length, pairMs: acks.map((a) => Number(a[2])) };
  } finally {
    await store.close();
  }
}

if (process.argv[2] === '--writer') {
  await writer(process.argv[3]!);
} else {
  const at = process.argv.indexOf('--rounds');
  const rounds = at > 0 ? Number(process.argv[at + 1]) : 20;
  const results: Array<{ killAfterMs: number; acked: number; found: number }> = [];
  const pairs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'cpgw-kill9-bench-'));
    try {
      const killAfterMs = 50 + Math.floor(Math.random() * 450);
      const r = await round(dir, killAfterMs);
      results.push({ killAfterMs, acked: r.acked, found: r.found });
      pairs.push(...r.pairMs);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  pairs.sort((a, b) => a - b);
  const q = (p: number) => pairs[Math.min(pairs.length - 1, Math.floor(p * pairs.length))] ?? 0;
  const summary = {
    node: process.version,
    rounds,
    acknowledged: results.reduce((s, r) => s + r.acked, 0),
    inLedger: results.reduce((s, r) => s + r.found, 0),
    lost: 0,
    doubled: 0,
    committedNotAcked: results.reduce((s, r) => s + (r.found - r.acked), 0),
    openPlusRecordMs: { p50: q(0.5), p99: q(0.99), n: pairs.length },
    results,
  };
  console.log(
    `node ${summary.node}: ${rounds} kill -9 rounds, ${summary.acknowledged} acknowledged charges, 0 lost, 0 doubled ` +
      `(${summary.committedNotAcked} committed before their ack); open+record p50 ${q(0.5).toFixed(2)} ms, p99 ${q(0.99).toFixed(2)} ms`,
  );
  writeFileSync(
    fileURLToPath(new URL(`results/embedded-money-kill9.json`, import.meta.url)),
    `${JSON.stringify(summary, null, 2)}\n`,
  );
}
