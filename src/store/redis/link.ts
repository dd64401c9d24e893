// The one command connection every Redis role shares: the client, the key names, script calls
// (EVALSHA, loading the script when the server does not know it) and the error mapping.
//
// Must never: let a connection fault escape as anything but StoreUnavailableError.
import { isNoScript, type RedisClient, toStoreError } from './connection.ts';
import type { RedisKeys } from './keys.ts';
import type { LuaScript } from './lua.ts';

export class RedisLink {
  constructor(
    readonly client: RedisClient,
    readonly k: RedisKeys,
    readonly onError: (error: unknown) => void,
  ) {}

  /** EVALSHA, loading the script with EVAL when the server does not know it yet. */
  async eval(script: LuaScript, keys: string[], args: (string | number | Buffer)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return this.client.eval(script.source, keys.length, ...keys, ...args);
    }
  }

  /** Runs Redis I/O, turning connection trouble into StoreUnavailableError. */
  async run<T>(io: () => Promise<T>): Promise<T> {
    try {
      return await io();
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** run(eval(...)). */
  script(script: LuaScript, keys: string[], args: (string | number | Buffer)[]): Promise<unknown> {
    return this.run(() => this.eval(script, keys, args));
  }
}
