// nginx proxy_cache in front of the emulator, for bench/cache-hits.ts: the reference a cache HIT is
// measured against. One worker process; a front server caches by URI and Accept-Encoding, a second
// server in the same worker compresses the emulator's answers (gzip, and brotli when the Debian
// module is installed) so the front stores and serves every coding as stored bytes (a HIT does no
// compression work, as in the gateway). Loopback only; its files live in a temporary directory.
// Returns null (with a notice) when nginx is not installed.
// Must never: listen beyond 127.0.0.1, or leave its process running (stop() waits for the exit).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';

const BROTLI_MODULE = '/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so';

export interface NginxCache {
  url: string;
  /** The worker's pid (CPU accounting), or undefined when not found. */
  workerPid(): number | undefined;
  brotli: boolean;
  stop(): Promise<void>;
}

function nginxBinary(): string | null {
  for (const path of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx'])
    if (existsSync(path)) return path;
  const which = spawnSync('which', ['nginx'], { encoding: 'utf8' });
  return which.status === 0 ? which.stdout.trim() || null : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts nginx in `dir` in front of `upstreamUrl` (the emulator), sending `apiKey` upstream. */
export async function startNginxCache(
  dir: string,
  upstreamUrl: string,
  apiKey: string,
): Promise<NginxCache | null> {
  const bin = nginxBinary();
  if (!bin) {
    console.error('nginx not installed (Debian: apt-get install nginx): nginx proxy_cache rows skipped');
    return null;
  }
  const brotli = existsSync(BROTLI_MODULE);
  const [front, packer] = [await freePort(), await freePort()];
  const upstream = new URL(upstreamUrl);
  await mkdir(join(dir, 'cache'), { recursive: true });
  // As root, nginx would run its worker as `nobody`, who cannot enter the private temporary directory.
  const user = process.getuid?.() === 0 ? 'user root root;\n' : '';
  const conf = `${brotli ? `load_module ${BROTLI_MODULE};\n` : ''}${user}worker_processes 1;
daemon off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  keepalive_requests 1000000;
  proxy_cache_path ${join(dir, 'cache')} levels=1:2 keys_zone=bench:10m max_size=1g inactive=1h use_temp_path=off;
  server {
    listen 127.0.0.1:${packer};
    gzip on; gzip_proxied any; gzip_types application/json; gzip_comp_level 6; gzip_min_length 1024;
    ${brotli ? 'brotli on; brotli_types application/json; brotli_comp_level 5; brotli_min_length 1024;' : ''}
    location / {
      proxy_pass http://${upstream.host};
      proxy_set_header Authorization "Bearer ${apiKey}";
      proxy_set_header Accept-Encoding "";
    }
  }
  server {
    listen 127.0.0.1:${front};
    location / {
      proxy_pass http://127.0.0.1:${packer};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Accept-Encoding $http_accept_encoding;
      proxy_cache bench;
      proxy_cache_key $request_uri|$http_accept_encoding;
      proxy_cache_valid 200 1h;
      proxy_ignore_headers Cache-Control Expires Set-Cookie Vary;
      add_header X-Cache $upstream_cache_status;
    }
  }
}
`;
  const confFile = join(dir, 'nginx.conf');
  await writeFile(confFile, conf);
  const proc: ChildProcess = spawn(bin, ['-p', dir, '-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (c: Buffer) => {
    err = (err + c.toString()).slice(-4096);
  });
  const url = `http://127.0.0.1:${front}`;
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited ${proc.exitCode}: ${err}`);
    try {
      await fetch(`${url}/__ready`);
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    brotli,
    workerPid: () => {
      try {
        const children = spawnSync('cat', [`/proc/${proc.pid}/task/${proc.pid}/children`], {
          encoding: 'utf8',
        });
        const pid = Number(children.stdout.trim().split(/\s+/)[0]);
        return Number.isInteger(pid) && pid > 0 ? pid : undefined;
      } catch {
        return undefined;
      }
    },
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGQUIT');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
