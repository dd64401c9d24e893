// The `cpgw` command: start | emulator | token new | check-config | migrate | help | --version.
// Parses arguments and hands over; no business logic lives here. Every subcommand answers
// --help (exit 0); every error is one line on stderr (a config error adds its list of problems)
// with exit 2, never a stack trace.
import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ADMIN_ROLES } from './auth/admin-roles.ts';
import { newToken, tokenHash } from './auth/tokens.ts';
import { loadConfig } from './config/load.ts';
import { SCOPES } from './config/schema.ts';

const CONFIG_NOTE =
  'Config files come from --config or CPGW_CONFIG (comma-separated); CPGW_* variables override them.';

const USAGE = `usage: cpgw <command> [options]

commands:
  start [--config FILE]...        run the gateway (no CPGW_UPSTREAM_API_KEY: demo mode with the bundled emulator)
  emulator [options]              run the upstream emulator alone (cpgw emulator --help)
  token new --app NAME [--scopes a,b]
                                  print a fresh app token once, and the config lines holding its hash
  token new --admin --name NAME --role admin|finance|viewer
                                  the same for a named admin token with a role
  check-config [--config FILE]... validate configuration without starting
  migrate [--config FILE]...      create or upgrade the PostgreSQL money schema (store.postgresUrl), then exit
  help [COMMAND]                  this text, or a command's
  --version                       the package version

${CONFIG_NOTE}`;

const START_USAGE = `usage: cpgw start [--config FILE]...

Run the gateway until SIGTERM/SIGINT (then finish in-flight requests and exit 0).
Without CPGW_UPSTREAM_API_KEY it runs a demo: the bundled emulator as the upstream and a
"demo" app whose token is printed once. With a key it refuses to start when no apps are configured.
${CONFIG_NOTE}`;

const TOKEN_USAGE = `usage: cpgw token new --app NAME [--scopes a,b]
       cpgw token new --admin [--name NAME --role admin|finance|viewer]
       cpgw token new --metrics

Print a fresh token (shown only this once) and the config lines holding its SHA-256 hash.
  --app NAME     lowercase letters, digits, "-" or "_" (starts with a letter); "admin" is
                 the admin API's token, the same as --admin
  --scopes a,b   default read:companies,read:checks; known: ${SCOPES.join(', ')}
  --admin        the admin API's token (admin.tokenHash, or CPGW_ADMIN_TOKEN_HASH)
  --name NAME    with --admin: a named admin token (admin.tokens); the name is the actor in
                 the audit trail
  --role ROLE    with --name: admin (everything), finance (budgets, ledger, reconciliation,
                 audit; no cache purge, reload or redeliver) or viewer (read-only)

  --metrics      a scrape token for GET /metrics on the main port (metrics.tokenHash, or
                 CPGW_METRICS_TOKEN_HASH); the metrics listener needs none`;

const CHECK_CONFIG_USAGE = `usage: cpgw check-config [--config FILE]...

Validate the configuration without starting; every problem is reported at once (exit 2).
${CONFIG_NOTE}`;

const MIGRATE_USAGE = `usage: cpgw migrate [--config FILE]...

Create or upgrade the PostgreSQL money schema at store.postgresUrl (CPGW_POSTGRES_URL) and exit.
The gateway also does this at start; run it alone to migrate before rolling out replicas.
Replicas migrating at the same time wait for each other (advisory lock). A schema newer than
this version knows is refused.
${CONFIG_NOTE}`;

const COMMANDS = ['start', 'emulator', 'token', 'check-config', 'migrate'];

/** A mistake in the command line or the configuration: reported as is, exit 2. */
class CliError extends Error {}

const HELP = { help: { type: 'boolean', short: 'h' } } as const;
const CONFIG = { config: { type: 'string', multiple: true } } as const;

/** parseArgs (plus --help/-h), its errors turned into one line that points at the command's --help. */
function parse<const T extends NonNullable<ParseArgsConfig['options']>>(
  command: string,
  args: string[],
  options: T,
) {
  const config = { args, options: { ...HELP, ...options }, strict: true, allowPositionals: false } as const;
  try {
    return parseArgs(config).values;
  } catch (err) {
    throw new CliError(`${(err as Error).message} (see cpgw ${command} --help)`);
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start':
      return start(rest);
    case 'emulator': {
      const { runEmulatorCli } = await import('./emulator/main.ts');
      return runEmulatorCli(rest);
    }
    case 'token':
      return token(rest);
    case 'check-config':
      return checkConfig(rest);
    case 'migrate':
      return migrateSchema(rest);
    case 'help':
    case '--help':
    case '-h':
      return help(rest[0]);
    case 'version':
    case '--version':
    case '-v':
      console.log(version());
      return 0;
    case undefined:
      console.error(USAGE);
      return 2;
    default:
      throw new CliError(`unknown command "${command}" (see cpgw --help)`);
  }
}

async function help(command: string | undefined): Promise<number> {
  const texts: Record<string, string> = {
    start: START_USAGE,
    token: TOKEN_USAGE,
    'check-config': CHECK_CONFIG_USAGE,
    migrate: MIGRATE_USAGE,
  };
  if (command === 'emulator') return main(['emulator', '--help']);
  if (command !== undefined && !texts[command])
    throw new CliError(`no such command "${command}" (see cpgw --help)`);
  console.log(command ? texts[command] : USAGE);
  return 0;
}

async function start(args: string[]): Promise<number> {
  const values = parse('start', args, CONFIG);
  if (values.help) return help('start');
  const { startGateway } = await import('./main.ts');
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway({ configFiles: values.config ?? [], banner: (text) => console.log(text) });
  } catch (err) {
    throw new CliError(`cannot start: ${(err as Error).message}`);
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`cpgw: ${signal} received, finishing in-flight requests`);
      gateway.close().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
    // SIGHUP: re-read the config files; a bad file is refused (every problem listed), the
    // running config stays.
    process.on('SIGHUP', () => {
      try {
        const { apps, restartNeeded } = gateway.reload();
        console.error(`cpgw: SIGHUP: configuration reloaded (apps: ${apps.join(', ') || 'none'})`);
        if (restartNeeded.length)
          console.error(
            `cpgw: changed settings that apply only after a restart: ${restartNeeded.join(', ')}`,
          );
      } catch (err) {
        console.error(
          `cpgw: SIGHUP: reload refused, the running configuration stays: ${(err as Error).message}`,
        );
      }
    });
  });
  return 0;
}

function token(args: string[]): Promise<number> | number {
  const [sub, ...rest] = args;
  if (sub === '--help' || sub === '-h') return help('token');
  if (sub !== 'new') {
    throw new CliError(
      `${sub === undefined ? 'missing subcommand' : `unknown subcommand "${sub}"`}; usage: cpgw token new --app NAME [--scopes a,b]`,
    );
  }
  const values = parse('token new', rest, {
    app: { type: 'string' },
    scopes: { type: 'string' },
    admin: { type: 'boolean' },
    name: { type: 'string' },
    role: { type: 'string' },
    metrics: { type: 'boolean' },
  });
  if (values.help) return help('token');
  if (values.metrics) {
    if (values.scopes || values.app || values.admin)
      throw new CliError('--metrics takes no --app, --admin or --scopes');
    const value = newToken();
    const hash = tokenHash(value);
    console.log(`metrics scrape token (for Prometheus; it is shown only this once):\n  ${value}\n`);
    console.log('config (the metrics: section):');
    console.log(`  metrics:\n    tokenHash: "${hash}"\n`);
    console.log(`or in the environment:\n  CPGW_METRICS_TOKEN_HASH=${hash}`);
    return 0;
  }
  if ((values.name !== undefined || values.role !== undefined) && !values.admin)
    throw new CliError('--name and --role are for admin tokens: add --admin');
  if (values.admin && (values.name !== undefined || values.role !== undefined)) {
    if (values.scopes || values.app) throw new CliError('--app and --scopes do not apply to an admin token');
    if (!values.name || !/^[a-z][a-z0-9_-]{0,62}$/.test(values.name))
      throw new CliError(
        '--name NAME is required (lowercase letters, digits, "-" or "_", starting with a letter)',
      );
    if (!(ADMIN_ROLES as readonly string[]).includes(values.role ?? ''))
      throw new CliError(`--role must be one of ${ADMIN_ROLES.join(', ')}`);
    const value = newToken();
    console.log(
      `admin token "${values.name}" (role ${values.role}; it is shown only this once):\n  ${value}\n`,
    );
    console.log('config (add to the top-level admin: section, under tokens:):');
    console.log(
      `  admin:\n    tokens:\n      - name: ${values.name}\n        role: ${values.role}\n        tokenHash: "${tokenHash(value)}"`,
    );
    return 0;
  }
  if (values.admin || values.app === 'admin') {
    if (values.scopes) throw new CliError('--scopes does not apply to the admin token');
    const value = newToken();
    const hash = tokenHash(value);
    console.log(`admin token (for operators; it is shown only this once):\n  ${value}\n`);
    console.log('config (the top-level admin: section, not under apps:):');
    console.log(`  admin:\n    tokenHash: "${hash}"\n`);
    console.log(`or in the environment:\n  CPGW_ADMIN_TOKEN_HASH=${hash}`);
    return 0;
  }
  if (!values.app || !/^[a-z][a-z0-9_-]{0,62}$/.test(values.app)) {
    throw new CliError(
      '--app NAME is required (lowercase letters, digits, "-" or "_", starting with a letter)',
    );
  }
  const scopes = (values.scopes ?? 'read:companies,read:checks').split(',').map((s) => s.trim());
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length)
    throw new CliError(`unknown scope(s) ${unknown.join(', ')}; known: ${SCOPES.join(', ')}`);
  const value = newToken();
  console.log(`token (give it to the app; it is shown only this once):\n  ${value}\n`);
  console.log('config (paste under apps:):');
  console.log(
    `  - name: ${values.app}\n    tokenHash: "${tokenHash(value)}"\n    scopes: [${scopes.join(', ')}]`,
  );
  return 0;
}

function checkConfig(args: string[]): Promise<number> | number {
  const values = parse('check-config', args, CONFIG);
  if (values.help) return help('check-config');
  const { config, upstreamApiKey, sources } = loadConfig({ files: values.config ?? [] });
  console.log(`configuration OK (${sources.length ? sources.join(', ') : 'embedded defaults'})`);
  console.log(`  apps: ${config.apps.map((a) => a.name).join(', ') || '(none)'}`);
  console.log(
    `  store: ${config.store.redisClusterNodes.length ? 'redis cluster' : config.store.redisUrl ? 'redis' : 'memory'}${config.store.postgresUrl ? ' (money in postgres)' : ''}`,
  );
  console.log(
    `  upstream: ${upstreamApiKey ? `${new URL(config.upstream.url).origin} (key from CPGW_UPSTREAM_API_KEY)` : 'demo mode (bundled emulator)'}`,
  );
  if (upstreamApiKey && config.apps.length === 0) {
    console.error('  problem: an upstream key is set but no apps are configured; start would refuse');
    return 2;
  }
  return 0;
}

async function migrateSchema(args: string[]): Promise<number> {
  const values = parse('migrate', args, CONFIG);
  if (values.help) return help('migrate');
  const { config } = loadConfig({ files: values.config ?? [] });
  const url = config.store.postgresUrl;
  if (!url) throw new CliError('store.postgresUrl is not set (CPGW_POSTGRES_URL): nothing to migrate');
  const { PgLink } = await import('./store/postgres/pg-link.ts');
  const { migrate } = await import('./store/postgres/migrate.ts');
  const link = new PgLink({
    url,
    poolMax: 1,
    statementTimeoutMs: Math.max(config.store.postgresStatementTimeoutMs, 60_000),
    onError: () => {},
  });
  try {
    const result = await migrate(link.pool);
    const applied = result.applied.length ? `applied ${result.applied.join(', ')}` : 'nothing to apply';
    console.log(`postgres ${link.where}: schema at version ${result.to} (${applied})`);
    return 0;
  } catch (err) {
    const { scrub } = await import('./store/postgres/pg-link.ts');
    throw new CliError(`postgres ${link.where}: ${scrub((err as Error).message, url).split('\n')[0]}`);
  } finally {
    await link.close();
  }
}

const argv = process.argv.slice(2);
main(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // A usage or config mistake carries its own clear message; anything else (a port in use, an
    // unreadable file) is named by its message alone: a stack trace helps nobody running cpgw.
    const command =
      argv[0] === 'token' && argv[1] === 'new'
        ? 'cpgw token new'
        : COMMANDS.includes(argv[0] ?? '')
          ? `cpgw ${argv[0]}`
          : 'cpgw';
    console.error(`${command}: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  },
);
