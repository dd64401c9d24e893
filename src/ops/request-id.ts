// The gateway's request ids (X-Request-Id, meta.request_id in an envelope, the log line's reqId,
// the ledger's request id): the shape of a UUID (8-4-4-4-12 lower-case hex), written by the
// fastify app (server/app.ts genReqId), the cache-hit path and the raw-socket refusals.
//
// An id is a per-process random prefix and a counter: RFC 9562's version 8 (a vendor layout),
// the variant bits 10, 90 random bits drawn once per process (and again each time the counter
// passes 2^30) and the counter as the last 8 hex digits, starting at a random value below 2^29
// (an id does not tell how many answers the process wrote). Ids are unique within a process by
// the counter and across processes and restarts by the prefix. The counter stays a small
// integer, so formatting it is cheap (a number past 2^31 is formatted in floating point).
// randomUUID() per answer cost a HIT ~0.25-0.7 µs (its batched randomFillSync refill).
//
// Must never: repeat an id within a process, or be used where an id must be unguessable (a
// request id is printed in every answer and log line; it guards nothing).
import { randomBytes } from 'node:crypto';

const COUNTER_LIMIT = 2 ** 30;
let prefix = '';
let counter = COUNTER_LIMIT;

/** A fresh `xxxxxxxx-xxxx-8xxx-yxxx-xxxx` (y: 8, 9, a or b) from 90 random bits. */
function newPrefix(): string {
  const hex = randomBytes(12).toString('hex');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(12, 15)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 24)}`;
}

/** The next request id of this process. */
export function nextRequestId(): string {
  if (counter >= COUNTER_LIMIT) {
    prefix = newPrefix();
    counter = randomBytes(4).readUInt32BE(0) >>> 3;
  }
  const n = counter++;
  const hex = n.toString(16);
  return hex.length === 8 ? prefix + hex : prefix + hex.padStart(8, '0');
}
