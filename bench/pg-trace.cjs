// A preload that counts every PostgreSQL statement a `cpgw start` process sends, with its time
// as the gateway sees it (queue, round trip, server, commit), and keeps their order; written
// every 2 s and at exit to $PG_TRACE_DIR/pg-trace-<pid>.json (default: the temp directory).
// pg_stat_database counts transactions, read-only ones included; this says which statements
// they were. Only processes whose arguments include `start` record (not the emulator, not the
// bench itself). Measurement only: never loaded by the gateway.
//   NODE_OPTIONS="--require $PWD/bench/pg-trace.cjs" node bin/run-ts.js bench/gateway-latency.ts 0 --paid 100 --stores postgres
//   node bench/pg-trace.cjs summary <file>    (statements by count, mean ms)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

if (process.argv[2] === 'summary') {
  const { stats } = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
  for (const [text, s] of stats.sort((a, b) => b[1].n - a[1].n))
    console.log(`${String(s.n).padStart(6)} ${(s.ms / s.n).toFixed(3).padStart(8)} ms  ${text}`);
} else if (process.argv.includes('start')) {
  const pg = require(path.join(__dirname, '..', 'node_modules', 'pg'));
  const stats = new Map();
  const seq = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === 'string' ? config : config?.text;
    const key = String(text).replace(/\s+/g, ' ').slice(0, 70);
    const t0 = performance.now();
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const ms = performance.now() - t0;
      const s = stats.get(key) ?? { n: 0, ms: 0 };
      s.n++;
      s.ms += ms;
      stats.set(key, s);
      if (seq.length < 20_000) seq.push([Math.round(t0 * 1000) / 1000, Math.round(ms * 1000) / 1000, key]);
    };
    // pg-pool passes a callback; a caller of its own may await the promise instead.
    const last = rest.length - 1;
    if (typeof rest[last] === 'function') {
      const callback = rest[last];
      rest[last] = function (...args) {
        finish();
        return callback.apply(this, args);
      };
    }
    const result = query.call(this, config, ...rest);
    if (result && typeof result.then === 'function') result.then(finish, finish);
    return result;
  };
  const file = path.join(process.env.PG_TRACE_DIR || os.tmpdir(), `pg-trace-${process.pid}.json`);
  const dump = () => {
    try {
      fs.writeFileSync(file, JSON.stringify({ stats: [...stats], seq }));
    } catch {}
  };
  setInterval(dump, 2_000).unref();
  process.on('exit', dump);
}
