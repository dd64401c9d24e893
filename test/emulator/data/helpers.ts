// Shared set-up for the emulator data tests: one data source per test file (the universe is
// built once) and a walker that yields every value under a key in a JSON tree.
import { createEmulatorData, type EmulatorData } from '../../../src/emulator/data/index.ts';

let shared: EmulatorData | undefined;
export function data(): EmulatorData {
  shared ??= createEmulatorData();
  return shared;
}

/** Every [key, value] pair in a JSON-like tree. */
export function* entries(node: unknown, key = ''): Generator<[string, unknown]> {
  if (Array.isArray(node)) {
    for (const item of node) yield* entries(item, key);
  } else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      yield [k, v];
      yield* entries(v, k);
    }
  }
}

/** A few typical synthetic companies from the universe (legal and sole proprietors). */
export function sampleInns(): string[] {
  const u = data().universeInns();
  return [...u.legal.slice(30, 45), ...u.individual.slice(10, 15)];
}
