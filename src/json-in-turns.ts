// Long work the admin API does at once, given back to the event loop in turns: the next turn
// (setImmediate) for a scan between its store reads, and the JSON text of a long array built a
// chunk per turn. Admin answers (a ledger page of 10,000, 10,000 reconciliation intervals) built
// in one piece held every other request, cache HITs included, for 50-200 ms
// (bench/ledger-export.ts, bench/reconciliation.ts).
//
// Must never: reorder or drop an item, or write other JSON than JSON.stringify would.
import { snakeCaseKeys } from './json-case.ts';

/** Items written per turn of the event loop. */
const CHUNK = 250;

/** The event loop's next turn: requests that arrived meanwhile are served before the work goes on. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `JSON.stringify(items.map(toJson))` with its keys in snake_case (as the preSerialization hook
 * writes an answer: json-case.ts), CHUNK items a turn.
 */
export async function jsonArrayInTurns<T>(
  items: readonly T[],
  toJson: (item: T) => unknown,
): Promise<string> {
  let out = '[';
  for (let i = 0; i < items.length; i += CHUNK) {
    if (i > 0) await nextTurn();
    let chunk = '';
    const end = Math.min(items.length, i + CHUNK);
    for (let j = i; j < end; j++)
      chunk += `${j > 0 ? ',' : ''}${JSON.stringify(snakeCaseKeys(toJson(items[j]!)))}`;
    out += chunk;
  }
  return `${out}]`;
}

/**
 * An answer's JSON text: `head`'s fields, then each long array (already JSON text, from
 * jsonArrayInTurns) under its name, then `tail`'s fields; keys in snake_case as the hook writes them.
 */
export function jsonWithArrays(
  head: Record<string, unknown>,
  arrays: Record<string, string>,
  tail: Record<string, unknown> = {},
): string {
  const parts: string[] = [];
  const fields = (o: Record<string, unknown>) => {
    const text = JSON.stringify(snakeCaseKeys(o));
    if (text !== '{}') parts.push(text.slice(1, -1));
  };
  fields(head);
  for (const [name, json] of Object.entries(arrays)) parts.push(`${JSON.stringify(name)}:${json}`);
  fields(tail);
  return `{${parts.join(',')}}`;
}
