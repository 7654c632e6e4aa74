// A throwaway Redis Cluster on loopback for the scale-out test and `bench:jobs --cluster`: N masters
// (redis-server --cluster-enabled yes, no persistence) joined by `redis-cli --cluster create`. Each
// server runs under a watchdog shell that stops it when this process is gone, however it ended.
import { execFile, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';

const run = promisify(execFile);

export interface LocalCluster {
  /** host:port of every master, joined by commas: the value of REDIS_CLUSTER_NODES. */
  nodes: string;
  ports: number[];
  stop(): Promise<void>;
}

/** The path of a program on the PATH, or null. */
export function findProgram(name: string): string | null {
  const which = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  const path = which.stdout.trim();
  return which.status === 0 && path ? path : null;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A port p with p + 10000 (the cluster bus port) free too; Redis before 7 cannot move the bus. */
async function clusterPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = 20_000 + Math.floor(Math.random() * 35_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a Redis Cluster node');
}

async function clusterState(port: number): Promise<string> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return String(await client.call('CLUSTER', 'INFO'));
  } catch {
    return '';
  } finally {
    client.disconnect();
  }
}

export async function startLocalCluster(masters = 3): Promise<LocalCluster> {
  const server = findProgram('redis-server');
  const cli = findProgram('redis-cli');
  if (!server || !cli) throw new Error('redis-server and redis-cli are needed on the PATH');
  const dir = mkdtempSync(join(tmpdir(), 'px-cluster-'));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            // The whole group: the watchdog shell and its redis-server.
            process.kill(-c.pid!, 'SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports: number[] = [];
    const taken = new Set<number>();
    for (let i = 0; i < masters; i++) {
      const port = await clusterPort(taken);
      taken.add(port).add(port + 10_000);
      ports.push(port);
    }
    for (const port of ports) {
      const args = [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--cluster-enabled', 'yes',
        '--cluster-config-file', join(dir, `nodes-${port}.conf`),
        '--save', '',
        '--appendonly', 'no',
        '--daemonize', 'no',
        '--dir', dir,
      ]; // prettier-ignore
      const watchdog =
        'bin="$1"; shift; "$bin" "$@" & r=$!; trap "kill $r 2>/dev/null" TERM INT; ' +
        `while kill -0 ${process.pid} 2>/dev/null && kill -0 $r 2>/dev/null; do sleep 1; done; ` +
        'kill $r 2>/dev/null; wait $r';
      children.push(
        spawn('sh', ['-c', watchdog, 'sh', server, ...args], {
          detached: true,
          stdio: 'ignore',
        }),
      );
    }
    for (const port of ports) {
      for (let i = 0; !(await clusterState(port)); i++) {
        if (i > 100) throw new Error(`redis-server on port ${port} did not answer`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    await run(cli, [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    // Every node must know every slot and every other node before a client can rely on the map.
    for (const port of ports) {
      for (let i = 0; ; i++) {
        const info = await clusterState(port);
        if (info.includes('cluster_state:ok') && info.includes(`cluster_known_nodes:${masters}`)) break;
        if (i > 200) throw new Error(`cluster node ${port} did not reach cluster_state:ok`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return { nodes: ports.map((p) => `127.0.0.1:${p}`).join(','), ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
