// Benchmark: what one request log line costs (README "Request log line"; every answer writes one
// at the default `log.level: info`), written the two ways src/ops/request-log.ts can: pino's
// general path (`access.info({ reqId, ...line }, 'request')`, what every line took before) and the
// gateway's own writer (writeRequestLog on an access logger made by logger.ts accessLogger(),
// which formats the same line itself). Both write to /dev/null through the destination the
// gateway's stdout is (logger.ts batchedDestination: lines batched to 4 KB, each batch one
// synchronous write), for a HIT's line and for a full-pipeline MISS's line (more fields). Run it under each Node the gateway supports:
//   node bin/run-ts.js bench/request-log.ts      (writes bench/results/request-log-node<major>.json)
import { mkdirSync, writeFileSync } from 'node:fs';
import { accessLogger, batchedDestination, createLogger } from '../src/logger.ts';
import {
  type LoggedContext,
  logLineOf,
  type RequestLogLine,
  writeRequestLog,
} from '../src/ops/request-log.ts';

const dest = batchedDestination('/dev/null');
const access = accessLogger(createLogger('info', dest));

const lineOf = (ctx: Partial<Record<keyof LoggedContext, unknown>>, elapsedMs: number): RequestLogLine =>
  logLineOf(ctx as LoggedContext, { route: null, method: 'GET', status: 200, elapsedMs, clientGone: false });
const LINES: Record<string, RequestLogLine> = {
  'HIT (bank record)': lineOf(
    {
      app: { name: 'billing' },
      route: { name: 'bank' },
      cache: 'HIT',
      chargedMinor: 0,
      upstreamRequestId: '9b2f4c1e-5d3a-4e6b-8c7d-1a2b3c4d5e6f',
    },
    0.084,
  ),
  'MISS (paid dossier)': lineOf(
    {
      app: { name: 'billing' },
      route: { name: 'company' },
      cache: 'MISS',
      chargedMinor: 4900,
      savedMinor: 0,
      upstreamRequestId: '9b2f4c1e-5d3a-4e6b-8c7d-1a2b3c4d5e6f',
      queuedMs: 0,
      upstreamMs: 2.871,
      upstreamAttempts: 1,
    },
    4.123,
  ),
};

const WAYS: Record<string, (reqId: string, line: RequestLogLine) => void> = {
  'pino (access.info)': (reqId, line) => access.info({ reqId, ...line }, 'request'),
  'the gateway (writeRequestLog)': (reqId, line) => writeRequestLog(access, reqId, line),
};

const N = 300_000;
const ROUNDS = 5;
const ids = Array.from({ length: 1024 }, (_, i) => `0f1e2d3c-4b5a-8697-a8b9-${String(i).padStart(12, '0')}`);
const results: Record<string, Record<string, number>> = {};
console.log(`Node ${process.version}: ns per line (median of ${ROUNDS} rounds of ${N.toLocaleString('en')})`);
for (const [lineName, line] of Object.entries(LINES)) {
  results[lineName] = {};
  for (const [way, write] of Object.entries(WAYS)) {
    for (let i = 0; i < 50_000; i++) write(ids[i & 1023]!, line);
    const times: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      for (let i = 0; i < N; i++) write(ids[i & 1023]!, line);
      times.push(((performance.now() - t0) * 1e6) / N);
    }
    times.sort((a, b) => a - b);
    results[lineName][way] = Math.round(times[ROUNDS >> 1]!);
    console.log(`  ${lineName.padEnd(22)} ${way.padEnd(32)} ${String(results[lineName][way]).padStart(6)}`);
  }
}
dest.flushSync();
const major = process.versions.node.split('.')[0];
mkdirSync('bench/results', { recursive: true });
const file = `bench/results/request-log-node${major}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ node: process.version, at: new Date().toISOString(), nsPerLine: results }, null, 2)}\n`,
);
console.log(`written ${file}`);
