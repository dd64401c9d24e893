// The `cpgw` command: start | emulator | token new | check-config | help.
// Parses arguments and hands over; no business logic lives here.
import { parseArgs } from 'node:util';
import { newToken, tokenHash } from './auth/tokens.ts';
import { ConfigError, loadConfig } from './config/load.ts';
import { SCOPES } from './config/schema.ts';

const USAGE = `usage: cpgw <command> [options]

commands:
  start [--config FILE]...        run the gateway (no CPGW_UPSTREAM_API_KEY: demo mode with the bundled emulator)
  emulator [options]              run the upstream emulator alone (cpgw emulator --help)
  token new --app NAME [--scopes a,b]
                                  print a fresh app token once, and the config lines holding its hash
  check-config [--config FILE]... validate configuration without starting
  help                            this text

Config files come from --config or CPGW_CONFIG (comma-separated); CPGW_* variables override them.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return start(rest);
    case 'emulator': {
      const { runEmulatorCli } = await import('./emulator/main.ts');
      await runEmulatorCli(rest);
      return 0;
    }
    case 'token':
      return token(rest);
    case 'check-config':
      return checkConfig(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`cpgw: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

function configFiles(args: string[]): string[] {
  const { values } = parseArgs({
    args,
    options: { config: { type: 'string', multiple: true } },
    strict: true,
  });
  return values.config ?? [];
}

async function start(args: string[]): Promise<number> {
  const { startGateway } = await import('./main.ts');
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway({ configFiles: configFiles(args), banner: (text) => console.log(text) });
  } catch (err) {
    console.error(`cpgw: cannot start: ${err instanceof ConfigError ? err.message : (err as Error).message}`);
    return 2;
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`cpgw: ${signal} received, finishing in-flight requests`);
      gateway.close().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}

function token(args: string[]): number {
  const [sub, ...rest] = args;
  if (sub !== 'new') {
    console.error('usage: cpgw token new --app NAME [--scopes read:companies,read:checks]');
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: { app: { type: 'string' }, scopes: { type: 'string' } },
    strict: true,
  });
  if (!values.app || !/^[a-z][a-z0-9_-]{0,62}$/.test(values.app)) {
    console.error('cpgw token new: --app NAME is required (lowercase letters, digits, "-" or "_")');
    return 2;
  }
  const scopes = (values.scopes ?? 'read:companies,read:checks').split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length) {
    console.error(`cpgw token new: unknown scope(s) ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
    return 2;
  }
  const value = newToken();
  console.log(`token (give it to the app; it is shown only this once):\n  ${value}\n`);
  console.log('config (paste under apps:):');
  console.log(
    `  - name: ${values.app}\n    tokenHash: "${tokenHash(value)}"\n    scopes: [${scopes.join(', ')}]`,
  );
  return 0;
}

function checkConfig(args: string[]): number {
  try {
    const { config, upstreamApiKey, sources } = loadConfig({ files: configFiles(args) });
    console.log(`configuration OK (${sources.length ? sources.join(', ') : 'embedded defaults'})`);
    console.log(`  apps: ${config.apps.map((a) => a.name).join(', ') || '(none)'}`);
    console.log(`  store: ${config.store.redisUrl ? 'redis' : 'memory'}`);
    console.log(
      `  upstream: ${upstreamApiKey ? `${new URL(config.upstream.url).origin} (key from CPGW_UPSTREAM_API_KEY)` : 'demo mode (bundled emulator)'}`,
    );
    if (upstreamApiKey && config.apps.length === 0) {
      console.error('  problem: an upstream key is set but no apps are configured; start would refuse');
      return 2;
    }
    return 0;
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    console.error(`cpgw: ${(err as Error).stack ?? err}`);
    process.exitCode = 1;
  },
);
