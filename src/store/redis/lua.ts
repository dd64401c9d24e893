// How the Redis store carries its Lua scripts (EVALSHA with the source as fallback), and the
// snippets several scripts share. Every script runs atomically on the server.
//
// Must never: read the caller's clock inside a script that decides windows of the limiter or
// budget hold expiry (those use redis.call('TIME')); leases and coverage windows use the `now`
// the caller passes instead.
import { createHash } from 'node:crypto';

export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

export function lua(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Server time in ms, as `now`. */
export const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;
