// `npm run witness -- --name <key name> --log <log vkey> ...`: a C2SP tlog-witness anyone can run
// (a customer, an auditor, a peer service). It cosigns a log's checkpoints only when they are
// consistent with the latest one it cosigned, so a log that forks or rolls back is refused with
// evidence in this program's own log. The checks are shared/platform/translog/witness.ts; this file
// is the program: flags and config file, the key (made on first start, mode 0600), the state file
// (written atomically, one request at a time), the HTTP server (node:http), and a clean stop on
// SIGTERM. It reads none of the service's configuration.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Cosigner } from '../shared/platform/translog/checkpoint';
import { parseVkey } from '../shared/platform/translog/note';
import type { Vkey } from '../shared/platform/translog/note';
import {
  SIZE_CONTENT_TYPE,
  WitnessRefusal,
  checkAddCheckpoint,
  cosign,
  formatWitnessState,
  isLogKey,
  parseAddCheckpoint,
  parseWitnessState,
  sizeBody,
  witnessCosigner,
} from '../shared/platform/translog/witness';
import type { AddCheckpoint, TrustedLogs, WitnessedLog } from '../shared/platform/translog/witness';

const usage = `usage: npm run witness -- [--config <file.json>] --name <key name> --log <log vkey> [options]
  --name <key name>   the witness's name in its cosignatures and vkey, e.g. witness.example.org/w1
  --log <vkey>        a log it accepts: the log's note verifier key, named as its origin (repeat for more)
  --listen <address>  host:port to listen on (default 127.0.0.1:7380; port 0 picks one)
  --prefix <path>     the submission prefix: POST <prefix>/add-checkpoint (default: none)
  --key <file>        its Ed25519 seed, made on first start with mode 0600 (default .data/witness/witness.key)
  --state <file>      the latest checkpoint it cosigned of each log (default .data/witness/state.json)
  --log-level <lvl>   fatal, error, warn, info (default), debug, trace or silent
  --config <file>     a JSON file with any of: name, listen, prefix, key, state, logLevel, and logs (vkeys,
                      or {"origin", "vkey"} objects); relative paths are read from the file's folder;
                      flags override it, and --log adds to its logs
  --print-vkey        print the witness's vkey (making its key if needed) and exit`;

/** The largest request body read: a checkpoint with 64 signatures, 63 proof lines and extension lines fit. */
const MAX_BODY = 64 * 1024;

export interface WitnessConfig {
  name: string;
  host: string;
  port: number;
  prefix: string;
  keyFile: string;
  stateFile: string;
  logs: TrustedLogs;
  logLevel: string;
}

class UsageError extends Error {}

const configFileSchema = z
  .object({
    name: z.string().optional(),
    listen: z.string().optional(),
    prefix: z.string().optional(),
    key: z.string().optional(),
    state: z.string().optional(),
    logLevel: z.string().optional(),
    logs: z
      .array(z.union([z.string(), z.object({ origin: z.string(), vkey: z.string() }).strict()]))
      .optional(),
  })
  .strict();

function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text) ?? /^()()(\d{1,5})$/.exec(text);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new UsageError(`--listen: ${text} is not host:port`);
  return { host: m[1] || m[2] || '127.0.0.1', port };
}

function trustedLog(entry: string | { origin: string; vkey: string }): Vkey {
  const { origin, vkey } = typeof entry === 'string' ? { origin: undefined, vkey: entry } : entry;
  let key: Vkey;
  try {
    key = parseVkey(vkey);
  } catch (err) {
    throw new UsageError(`log ${vkey}: ${(err as Error).message}`);
  }
  if (!isLogKey(key)) throw new UsageError(`log ${vkey}: not an Ed25519 note key (type 0x01)`);
  if (origin !== undefined && origin !== key.name)
    throw new UsageError(`log ${origin}: its vkey is named ${key.name}; a log's key is named as its origin`);
  return key;
}

/** The configuration from the command line and the config file it names. */
export function witnessConfig(argv: string[]): WitnessConfig & { printVkey: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      name: { type: 'string' },
      listen: { type: 'string' },
      prefix: { type: 'string' },
      key: { type: 'string' },
      state: { type: 'string' },
      log: { type: 'string', multiple: true },
      'log-level': { type: 'string' },
      'print-vkey': { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) throw new UsageError('');
  let file: z.infer<typeof configFileSchema> = {};
  let base = process.cwd();
  if (values.config) {
    base = dirname(resolve(values.config));
    try {
      file = configFileSchema.parse(JSON.parse(readFileSync(values.config, 'utf8')));
    } catch (err) {
      throw new UsageError(`--config ${values.config}: ${(err as Error).message}`);
    }
  }
  const name = values.name ?? file.name;
  if (!name) throw new UsageError('--name is required (the witness key name, e.g. witness.example.org/w1)');
  if (/[\s+]/u.test(name)) throw new UsageError('--name has no spaces or +');
  const prefix = values.prefix ?? file.prefix ?? '';
  if (prefix !== '' && !/^\/[^?#\s]*[^/?#\s]$/.test(prefix))
    throw new UsageError('--prefix is a path starting with / and not ending with /');
  const logs = new Map<string, Vkey[]>();
  for (const entry of [...(file.logs ?? []), ...(values.log ?? [])]) {
    const key = trustedLog(entry);
    const keys = logs.get(key.name) ?? [];
    if (!keys.some((k) => k.keyId === key.keyId && k.publicKey.equals(key.publicKey))) keys.push(key);
    logs.set(key.name, keys);
  }
  const printVkey = values['print-vkey'] === true;
  if (logs.size === 0 && !printVkey) throw new UsageError('name at least one log with --log <vkey>');
  const logLevel = values['log-level'] ?? file.logLevel ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel))
    throw new UsageError(`--log-level: ${logLevel} is not a level`);
  const fromFile = (p: string | undefined) => (p === undefined ? undefined : resolve(base, p));
  return {
    name,
    ...parseListen(values.listen ?? file.listen ?? '127.0.0.1:7380'),
    prefix,
    keyFile: resolve(values.key ?? fromFile(file.key) ?? '.data/witness/witness.key'),
    stateFile: resolve(values.state ?? fromFile(file.state) ?? '.data/witness/state.json'),
    logs,
    logLevel,
    printVkey,
  };
}

/** The witness's seed: read from its file, or made there on first start (mode 0600, never overwritten). */
async function loadKey(file: string, log: Logger): Promise<Buffer> {
  const read = () => {
    const text = readFileSync(file, 'utf8').trim();
    if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`${file} is not a 32-byte seed in hex`);
    if ((statSync(file).mode & 0o077) !== 0)
      log.warn({ file }, 'the witness key file is readable by others; chmod 600 it');
    return Buffer.from(text, 'hex');
  };
  try {
    return read();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const seed = randomBytes(32);
  try {
    writeFileSync(file, `${seed.toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return read();
    throw err;
  }
  log.info({ file }, 'made a new witness key');
  return seed;
}

/**
 * The state file: one process holds it (a lock file beside it names that process), every update is a
 * whole new file made durable and renamed over the old one, so a crash leaves the old state or the new.
 */
class StateFile {
  private readonly lockFile: string;

  constructor(readonly file: string) {
    this.lockFile = `${file}.lock`;
  }

  /** Takes the lock file; refuses when a live process holds it. */
  lock(): void {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(this.lockFile, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        process.once('exit', () => this.unlock());
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = Number(readFileSync(this.lockFile, 'utf8').trim());
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
        throw new Error(`another witness (pid ${pid}) uses ${this.file}; two would cosign apart`);
      unlinkSync(this.lockFile); // left by a process that is gone
    }
    throw new Error(`cannot take ${this.lockFile}`);
  }

  unlock(): void {
    try {
      if (readFileSync(this.lockFile, 'utf8').trim() === String(process.pid)) unlinkSync(this.lockFile);
    } catch {
      // already gone
    }
  }

  load(): Map<string, WitnessedLog> {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw err;
    }
    try {
      return parseWitnessState(text);
    } catch (err) {
      throw new Error(
        `${this.file} is not a witness state (${(err as Error).message}); it is never replaced`,
      );
    }
  }

  /** Writes the whole state: temporary file, fsync, rename over the old one, fsync of the folder. */
  async persist(logs: ReadonlyMap<string, WitnessedLog>): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    const handle = await open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(formatWitnessState(logs), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.file);
    const dir = openSync(dirname(this.file), 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs one function at a time, in arrival order: the check and the update of the state are one step. */
class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

interface Answer {
  status: number;
  body: string;
  type?: string;
  headers?: Record<string, string>;
}

const text = (status: number, body: string, headers?: Record<string, string>): Answer => ({
  status,
  body: body.endsWith('\n') ? body : `${body}\n`,
  headers,
});

class TooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > MAX_BODY) throw new TooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export interface RunningWitness {
  server: http.Server;
  url: string;
  vkey: string;
  close(): Promise<void>;
}

/** Starts the witness: key, state, server. Resolves once it listens. */
export async function startWitness(config: WitnessConfig, log: Logger): Promise<RunningWitness> {
  const witness: Cosigner = witnessCosigner(config.name, await loadKey(config.keyFile, log));
  await mkdir(dirname(config.stateFile), { recursive: true, mode: 0o700 });
  const store = new StateFile(config.stateFile);
  store.lock();
  let logs: ReadonlyMap<string, WitnessedLog>;
  try {
    logs = store.load();
  } catch (err) {
    store.unlock();
    throw err;
  }
  const serial = new Serial();
  const byOriginHash = new Map(
    [...config.logs.keys()].map((o) => [createHash('sha256').update(o).digest('hex'), o] as const),
  );

  const addCheckpoint = async (body: Buffer): Promise<Answer> => {
    let req: AddCheckpoint;
    try {
      req = parseAddCheckpoint(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch (err) {
      return text(400, err instanceof WitnessRefusal ? err.reason : 'the body is not UTF-8');
    }
    const origin = req.checkpoint.origin;
    return serial.run(async () => {
      const latest = logs.get(origin);
      let logLines: string[];
      try {
        logLines = checkAddCheckpoint(req, config.logs, latest);
      } catch (err) {
        if (!(err instanceof WitnessRefusal)) throw err;
        if (err.status === 403)
          // Someone speaking for the log: noted, but not kept whole (anyone can send these).
          log.warn(
            { status: err.status, reason: err.reason, origin, size: req.checkpoint.size },
            'refused a checkpoint the log did not sign',
          );
        else if (config.logs.has(origin))
          // Kept whole as evidence: a checkpoint the log signed that does not extend what this witness
          // cosigned is a fork or a rollback, and the log's signature makes it provable to anyone.
          log.warn(
            {
              evidence: true,
              status: err.status,
              reason: err.reason,
              origin,
              oldSize: req.oldSize,
              size: req.checkpoint.size,
              proof: req.proof.map((h) => h.toString('base64')),
              checkpoint: req.note,
              latest: latest?.checkpoint ?? null,
            },
            'refused a checkpoint of a known log',
          );
        if (err.status === 409)
          return { status: 409, body: sizeBody(latest?.size ?? 0), type: SIZE_CONTENT_TYPE };
        return text(err.status, err.reason);
      }
      const { record, line } = cosign(req, logLines, witness, latest);
      const next = new Map(logs).set(origin, record);
      try {
        await store.persist(next);
      } catch (err) {
        // Whatever reached the disk is what the witness holds from here on (the cosignature is not sent).
        logs = store.load();
        throw err;
      }
      logs = next;
      log.info(
        { origin, oldSize: req.oldSize, size: record.size, cosignedAt: record.cosignedAt },
        'cosigned',
      );
      return { status: 200, body: line };
    });
  };

  const route = async (req: IncomingMessage): Promise<Answer> => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path === `${config.prefix}/add-checkpoint`) {
      if (req.method !== 'POST') return text(405, 'add-checkpoint is a POST', { Allow: 'POST' });
      return addCheckpoint(await readBody(req));
    }
    const m = /^(.*)\/([0-9a-f]{64})\/checkpoint$/.exec(path);
    if (m && m[1] === config.prefix && (req.method === 'GET' || req.method === 'HEAD')) {
      const origin = byOriginHash.get(m[2]!);
      const kept = origin === undefined ? undefined : logs.get(origin);
      return kept ? { status: 200, body: kept.checkpoint } : text(404, 'no checkpoint of this log cosigned');
    }
    return text(404, 'not found');
  };

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    route(req)
      .catch((err: unknown) => {
        if (err instanceof TooLarge) return text(413, `the body is larger than ${MAX_BODY} bytes`);
        log.error({ err: (err as Error).message }, 'request failed');
        return text(500, 'the witness could not answer; nothing was cosigned');
      })
      .then((a) => {
        res.writeHead(a.status, {
          'Content-Type': a.type ?? 'text/plain; charset=utf-8',
          'Content-Length': Buffer.byteLength(a.body),
          ...a.headers,
        });
        res.end(req.method === 'HEAD' ? undefined : a.body);
      })
      .catch(() => res.destroy());
  };

  const server = http.createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, handler);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(config.port, config.host, () => {
      server.off('error', fail);
      ok();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${config.prefix}`;
  log.info(
    { name: config.name, vkey: witness.vkey, url, logs: [...config.logs.keys()], state: config.stateFile },
    'witness listening',
  );

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= new Promise<void>((done) => {
      // Requests in flight finish (their state is written before they answer); idle connections go now.
      const force = setTimeout(() => server.closeAllConnections(), 10_000).unref();
      server.close(() => {
        clearTimeout(force);
        void serial.run(async () => store.unlock()).then(done);
      });
      server.closeIdleConnections();
    }));
  return { server, url, vkey: witness.vkey, close };
}

async function main(): Promise<number> {
  let config: ReturnType<typeof witnessConfig>;
  try {
    config = witnessConfig(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof TypeError)) throw err;
    // --help is asked for: the usage on stdout and 0; a mistake: its line and the usage on stderr, 2.
    if (!err.message) {
      process.stdout.write(`${usage}\n`);
      return 0;
    }
    process.stderr.write(`witness: ${err.message}\n${usage}\n`);
    return 2;
  }
  // With --print-vkey, stdout carries the vkey alone (a script reads its last line): the log, which
  // says when a key is made, goes to stderr.
  const log = pino(
    {
      level: config.logLevel,
      base: { service: 'witness', witness: config.name },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    pino.destination({ dest: config.printVkey ? 2 : 1, sync: true }),
  );
  if (config.printVkey) {
    const witness = witnessCosigner(config.name, await loadKey(config.keyFile, log));
    process.stdout.write(`${witness.vkey}\n`);
    return 0;
  }
  // Signals are heard from the start: one that comes while the witness is starting stops it once it has.
  let started: Promise<RunningWitness | undefined> = Promise.resolve(undefined);
  const stopped = new Promise<number>((done) => {
    let signals = 0;
    const stop = (signal: string) => {
      if (++signals > 1) process.exit(1);
      log.info({ signal }, 'stopping');
      void started.then(async (running) => {
        await running?.close();
        done(0);
      });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  started = startWitness(config, log);
  try {
    await started;
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'the witness cannot start');
    return 1;
  }
  return stopped;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main();
