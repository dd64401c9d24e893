import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // vitest's default is one worker per CPU less one: a single worker on the 2-core CI machine,
    // where the suite is mostly waiting on sockets, timers and child processes. Two files at a
    // time (each with its own ports, key prefixes and databases) cut the wall time.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
