// Test harness: starts an emulator on port 0 with short timings and talks to it over real
// HTTP (Node's fetch). Helpers for the control API and for finding INNs of each kind.
// Not a test file itself; never shares one emulator between test files.
import { completeInn } from '../../src/domain/identifiers.ts';
import { isUnknownBic } from '../../src/emulator/data/banks.ts';
import { isUnknownInn } from '../../src/emulator/data/core.ts';
import { createEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/emulator-server.ts';

export const KEY = 'emulator-key';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected field by field
  json: any;
}

export interface Harness {
  emu: Emulator;
  url: string;
  get(path: string, init?: { key?: string | null; headers?: Record<string, string> }): Promise<Reply>;
  post(
    path: string,
    body: unknown,
    init?: { key?: string | null; headers?: Record<string, string> },
  ): Promise<Reply>;
  control(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply>;
  advance(ms: number): Promise<void>;
  close(): Promise<void>;
}

async function toReply(response: Response): Promise<Reply> {
  const text = await response.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {}
  return { status: response.status, headers: response.headers, text, json };
}

export async function startHarness(options: EmulatorOptions = {}): Promise<Harness> {
  const emu = await createEmulator({
    checkSeconds: 0.3,
    checkWaitSeconds: 0.1,
    priceLagSeconds: 3,
    webhookTimeoutMs: 2000,
    ...options,
  });
  const headersFor = (key: string | null | undefined, extra?: Record<string, string>) => ({
    ...(key === null ? {} : { authorization: `Bearer ${key ?? KEY}` }),
    ...extra,
  });
  const harness: Harness = {
    emu,
    url: emu.url,
    get: async (path, init) =>
      toReply(await fetch(emu.url + path, { headers: headersFor(init?.key, init?.headers) })),
    post: async (path, body, init) =>
      toReply(
        await fetch(emu.url + path, {
          method: 'POST',
          headers: headersFor(init?.key, { 'content-type': 'application/json', ...init?.headers }),
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
      ),
    control: async (method, path, body) =>
      toReply(
        await fetch(`${emu.url}/_emulator${path}`, {
          method,
          headers: headersFor(undefined, body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      ),
    advance: async (ms) => {
      const r = await harness.control('POST', '/clock', { advance_ms: ms });
      if (r.status !== 200) throw new Error(`clock advance failed: ${r.text}`);
    },
    close: () => emu.close(),
  };
  return harness;
}

/** Valid 10-digit INNs the data knows (a company), distinct per `start`. */
export function knownInns(count: number, start = 0): string[] {
  const out: string[] = [];
  for (let i = start; out.length < count; i++) {
    const inn = completeInn(String(771000000 + i * 7));
    if (!isUnknownInn(inn)) out.push(inn);
  }
  return out;
}

/** A valid INN that no register knows (404). */
export function unknownInn(): string {
  for (let i = 0; ; i++) {
    const inn = completeInn(String(772000000 + i));
    if (isUnknownInn(inn)) return inn;
  }
}

/** A nine-digit BIC the directory does not know (404). */
export function unknownBic(): string {
  for (let i = 0; ; i++) {
    const bic = `0445${String(10000 + i).padStart(5, '0')}`;
    if (isUnknownBic(bic)) return bic;
  }
}

/** Valid 12-digit INNs (natural persons). */
export function personInns(count: number, start = 0): string[] {
  const out: string[] = [];
  for (let i = start; out.length < count; i++) {
    const inn = completeInn(String(5001000000 + i * 13));
    if (!isUnknownInn(inn)) out.push(inn);
  }
  return out;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `fn` until it returns a truthy value or the real-time deadline passes. */
export async function eventually<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}
