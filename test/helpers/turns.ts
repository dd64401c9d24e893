// Counting turns of the event loop, for tests that long work gives the loop back between its
// pieces (src/json-in-turns.ts, the spend ledger's scans).

/** Counts turns of the event loop (a setImmediate callback each) from now until stopped. */
export function turnCounter(): { turns: () => number; stop: () => void } {
  let turns = 0;
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    turns: () => turns,
    stop: () => {
      stopped = true;
    },
  };
}
