// json-in-turns.ts: a long array's JSON text built a chunk per turn of the event loop is the text
// the preSerialization hook would write for it (JSON.stringify of the snake_case keys), items in
// order; other work runs between the chunks; an answer's text puts head, arrays and tail in order.
import { describe, expect, it } from 'vitest';
import { snakeCaseKeys } from '../../src/json-case.ts';
import { jsonArrayInTurns, jsonWithArrays, nextTurn } from '../../src/json-in-turns.ts';
import { turnCounter } from '../helpers/turns.ts';

describe('jsonArrayInTurns', () => {
  it('writes what JSON.stringify writes for the snake_case items, in order, empty and long', async () => {
    const toJson = (i: number) => ({
      amountMinor: i,
      at: i * 1000,
      nested: { requestId: `r${i}`, x: [i] },
      note: 'é"\n',
    });
    for (const n of [0, 1, 249, 250, 251, 1_234]) {
      const items = Array.from({ length: n }, (_, i) => i);
      const text = await jsonArrayInTurns(items, toJson);
      expect(text).toBe(JSON.stringify(snakeCaseKeys(items.map(toJson))));
    }
  });

  it('lets other work run between its chunks', async () => {
    const counter = turnCounter();
    await jsonArrayInTurns(
      Array.from({ length: 2_000 }, (_, i) => i),
      (i) => ({ i }),
    );
    const turns = counter.turns();
    counter.stop();
    expect(turns).toBeGreaterThanOrEqual(7); // 8 chunks of 250: a turn between each two
    await nextTurn();
  });
});

describe('jsonWithArrays', () => {
  it('is the object the hook would write: head fields, the arrays, tail fields, in that order', async () => {
    const head = { from: 'a', timeZone: 'UTC', totals: { topUpMinor: 1 } };
    const entries = await jsonArrayInTurns([1, 2], (i) => ({ amountMinor: i }));
    const text = jsonWithArrays(head, { entries }, { pending: [], outbox: 0 });
    expect(text).toBe(
      JSON.stringify(
        snakeCaseKeys({ ...head, entries: [{ amountMinor: 1 }, { amountMinor: 2 }], pending: [], outbox: 0 }),
      ),
    );
    expect(jsonWithArrays({}, { a: '[]' })).toBe('{"a":[]}');
    expect(JSON.parse(jsonWithArrays({ x: 1 }, {}))).toEqual({ x: 1 });
  });
});
