// The log's side of C2SP tlog-witness: the worker sends each new checkpoint to every witness of the
// policy in LOG_WITNESSES (add-checkpoint, with a consistency proof from the size that witness last
// cosigned), and keeps the cosignature lines it gets back in `checkpoint_cosignatures`, where the served
// checkpoint takes them from. Appends never wait for this: a witness that is down or slow is retried
// with a growing wait, alone, while the log goes on.
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/knex';
import { operatorFetch } from '../egress';
import { env } from '../env';
import type { Env } from '../env';
import { logger } from '../log';
import { witnessLag, witnessRequests } from '../metrics';
import { untagged } from '../redis';
import type { RedisClient } from '../redis';
import { parseCheckpoint, verifyCosignature } from './checkpoint';
import type { SignedCheckpoint } from './checkpoint';
import { fromHex } from './merkle';
import { formatVkey, parseNote, signaturesBy, signatureLine } from './note';
import type { Vkey } from './note';
import { checkpointAt } from './pg-checkpoints';
import { consistencyProofBetween } from './pg-log';
import { parsePolicy } from './policy';
import type { Policy } from './policy';
import { SIZE_CONTENT_TYPE, formatAddCheckpoint, parseSizeBody } from './witness';

/** The log's latest checkpoint: the signed note, and its tree size. */
export interface LogCheckpoint {
  note: string;
  size: number;
}

/** What the witnessing loop needs of the log. */
export interface CheckpointLog {
  /** The latest checkpoint the log signed, or undefined before its first. */
  latestCheckpoint(db: Db): Promise<LogCheckpoint | undefined>;
  /** The RFC 6962 consistency proof from the tree of `m` leaves to the tree of `n`. */
  consistencyProof(db: Db, m: number, n: number): Promise<Buffer[]>;
}

/** The log in Postgres: its latest stored checkpoint, and consistency proofs from its tree. */
export const pgCheckpointLog: CheckpointLog = {
  async latestCheckpoint(db) {
    const latest = await checkpointAt(db);
    return latest && { note: latest.note, size: latest.treeSize };
  },
  consistencyProof: async (db, m, n) => (await consistencyProofBetween(db, m, n)).path.map(fromHex),
};

// ---------------------------------------------------------------------------------------------------
// LOG_WITNESSES

export interface WitnessPolicy {
  /** The policy text, as verifiers are given it. */
  text: string;
  policy: Policy;
}

const policyLine = /^[ \t]*(#|(log|witness|group|quorum)[ \t])/m;

/** The policy LOG_WITNESSES holds, or names the file of; undefined when unset. Throws on a bad one. */
export function witnessPolicy(value: string | undefined = env.LOG_WITNESSES): WitnessPolicy | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  let text = value;
  if (!policyLine.test(value)) {
    try {
      text = readFileSync(value.trim(), 'utf8');
    } catch (err) {
      throw new Error(`not a policy, and no file of that name can be read (${(err as Error).message})`);
    }
  }
  const policy = parsePolicy(text);
  for (const [name, w] of policy.witnesses) {
    if (w.url === undefined) continue;
    let url: URL;
    try {
      url = new URL(w.url);
    } catch {
      throw new Error(`witness ${name}: ${w.url} is not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new Error(`witness ${name}: its URL is http or https`);
  }
  return { text, policy };
}

/** Start-up check of LOG_WITNESSES, one line per problem (the worker refuses to start on any). */
export function witnessSettingIssues(e: Pick<Env, 'LOG_WITNESSES'>): string[] {
  try {
    witnessPolicy(e.LOG_WITNESSES);
    return [];
  } catch (err) {
    return [`LOG_WITNESSES: ${(err as Error).message}`];
  }
}

// ---------------------------------------------------------------------------------------------------
// The loop

interface Witness {
  name: string;
  key: Vkey;
  vkey: string;
  url: string;
}

interface ProgressRow {
  witness_name: string;
  vkey: string;
  cosigned_size: string;
  failures: number;
  next_attempt_at: Date | null;
}

export interface WitnessingOptions {
  pollMs: number;
  timeoutMs: number;
  retryMaxMs: number;
  /** Prefix of the Redis keys that let one process at a time speak to a witness. */
  lockPrefix: string;
}

/** What one attempt with a witness came to. */
export type Outcome =
  | { outcome: 'cosigned'; size: number; oldSize: number }
  | { outcome: 'current' | 'not_due' | 'locked' }
  | { outcome: 'failed'; reason: string };

const MAX_ANSWER = 64 * 1024;

/** Reads at most MAX_ANSWER bytes of an answer (a witness is the operator's choice, not trusted with memory). */
async function readAnswer(res: Awaited<ReturnType<typeof operatorFetch>>): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of res.body ?? []) {
    length += (chunk as Uint8Array).length;
    if (length > MAX_ANSWER) throw new Error(`the answer is longer than ${MAX_ANSWER} bytes`);
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks).toString('utf8');
}

const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

export class Witnessing {
  private readonly witnesses: Witness[];
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private tickRunning: Promise<void> | undefined;
  private readonly inFlight = new Map<string, Promise<Outcome>>();
  private abort = new AbortController();

  constructor(
    private readonly db: Db,
    private readonly lockRedis: RedisClient,
    policy: Policy,
    private readonly log: CheckpointLog,
    private readonly opts: WitnessingOptions = {
      pollMs: env.LOG_WITNESS_POLL_MS,
      timeoutMs: env.LOG_WITNESS_TIMEOUT_MS,
      retryMaxMs: env.LOG_WITNESS_RETRY_MAX_MS,
      lockPrefix: untagged(env.QUEUE_PREFIX),
    },
  ) {
    this.witnesses = [...policy.witnesses]
      .filter(([, w]) => w.url !== undefined)
      .map(([name, w]) => ({
        name,
        key: w.key,
        vkey: formatVkey(w.key.name, w.key.type, w.key.publicKey),
        url: `${w.url!.replace(/\/+$/, '')}/add-checkpoint`,
      }));
    const silent = [...policy.witnesses].filter(([, w]) => w.url === undefined).map(([n]) => n);
    if (silent.length)
      logger.info({ witnesses: silent }, 'witnesses without a URL in LOG_WITNESSES are not asked to cosign');
  }

  /** Looks for a new checkpoint every pollMs and hands it to each witness that is due. */
  start(): void {
    if (!this.stopped || this.witnesses.length === 0) return;
    this.stopped = false;
    this.abort = new AbortController();
    const tick = async () => {
      this.tickRunning = this.tick().catch((err: Error) =>
        logger.warn({ err: err.message }, 'witnessing: cannot read the latest checkpoint'),
      );
      await this.tickRunning;
      if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollMs);
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stops looking, abandons the requests in flight (nothing is written for them), waits for them to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort();
    await this.tickRunning;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** One look: the latest checkpoint goes to every witness not already being asked by this process. */
  async tick(): Promise<void> {
    const latest = await this.log.latestCheckpoint(this.db);
    if (!latest) return;
    for (const w of this.witnesses) {
      if (this.inFlight.has(w.name)) continue;
      const run = this.submit(w, latest)
        .catch((err: Error): Outcome => {
          logger.warn({ witness: w.name, err: err.message }, 'witnessing failed');
          return { outcome: 'failed', reason: err.message };
        })
        .finally(() => this.inFlight.delete(w.name));
      this.inFlight.set(w.name, run);
    }
  }

  /** Runs every due witness once against the latest checkpoint and waits for them (tests, tools). */
  async runOnce(): Promise<Map<string, Outcome>> {
    const latest = await this.log.latestCheckpoint(this.db);
    const out = new Map<string, Outcome>();
    if (!latest) return out;
    for (const w of this.witnesses) out.set(w.name, await this.submit(w, latest));
    return out;
  }

  /** Asks one witness to cosign `latest`, holding that witness's lock so no other process does at once. */
  async submit(w: Witness, latest: LogCheckpoint): Promise<Outcome> {
    const key = `${this.opts.lockPrefix}:witness:${w.name}:lock`;
    const token = randomUUID();
    const got = await this.lockRedis.set(key, token, 'PX', 2 * this.opts.timeoutMs + 5_000, 'NX');
    if (got !== 'OK') return { outcome: 'locked' };
    try {
      return await this.submitLocked(w, latest);
    } finally {
      await this.lockRedis.eval(RELEASE, 1, key, token).catch(() => undefined);
    }
  }

  private async progress(w: Witness): Promise<{ size: number; failures: number; due: boolean }> {
    const row = (await this.db('witness_progress').where({ witness_name: w.name }).first()) as
      ProgressRow | undefined;
    if (!row) return { size: 0, failures: 0, due: true };
    // A witness given a new key keeps a new record of the log: start again from 0 (its 409 says where it is).
    if (row.vkey !== w.vkey) {
      await this.saveProgress(w, { cosigned_size: 0, failures: 0, next_attempt_at: null, last_error: null });
      return { size: 0, failures: 0, due: true };
    }
    return {
      size: Number(row.cosigned_size),
      failures: row.failures,
      due: row.next_attempt_at === null || row.next_attempt_at.getTime() <= Date.now(),
    };
  }

  private async saveProgress(w: Witness, fields: Record<string, unknown>): Promise<void> {
    await this.db('witness_progress')
      .insert({ witness_name: w.name, vkey: w.vkey, ...fields, updated_at: this.db.fn.now() })
      .onConflict('witness_name')
      .merge();
  }

  private async submitLocked(w: Witness, latest: LogCheckpoint): Promise<Outcome> {
    const cp = parseCheckpoint(latest.note);
    let progress = await this.progress(w);
    witnessLag.set({ witness: w.name }, Math.max(0, cp.size - progress.size));
    if (progress.size === cp.size && (await this.hasCosignature(w, cp.size))) return { outcome: 'current' };
    if (!progress.due) return { outcome: 'not_due' };
    // A 409 says what the witness last cosigned; the request is made again once from there.
    for (let attempt = 0; attempt < 2; attempt++) {
      const oldSize = progress.size;
      if (oldSize > cp.size)
        return this.failed(
          w,
          progress.failures,
          `the witness has cosigned ${oldSize} leaves, more than the log's latest checkpoint (${cp.size})`,
          'error',
        );
      const proof =
        oldSize === 0 || oldSize === cp.size
          ? []
          : await this.log.consistencyProof(this.db, oldSize, cp.size);
      let answer: { status: number; type: string; body: string };
      try {
        const res = await operatorFetch(w.url, {
          method: 'POST',
          headers: { 'Content-Type': 'text/plain; charset=utf-8' },
          body: formatAddCheckpoint(oldSize, proof, latest.note),
          signal: AbortSignal.any([AbortSignal.timeout(this.opts.timeoutMs), this.abort.signal]),
        });
        answer = {
          status: res.status,
          type: res.headers.get('content-type') ?? '',
          body: await readAnswer(res),
        };
      } catch (err) {
        if (this.abort.signal.aborted) return { outcome: 'failed', reason: 'stopped' };
        return this.failed(w, progress.failures, `unreachable: ${(err as Error).message}`, 'warn');
      }
      if (answer.status === 200) return this.cosigned(w, cp, oldSize, answer.body, progress.failures);
      if (answer.status === 409) {
        const size =
          answer.type.split(';')[0]!.trim() === SIZE_CONTENT_TYPE ? parseSizeBody(answer.body) : undefined;
        if (size === undefined) return this.failed(w, progress.failures, 'a 409 without a size body', 'warn');
        witnessRequests.inc({ witness: w.name, outcome: 'conflict' });
        await this.saveProgress(w, { cosigned_size: size });
        progress = { ...progress, size };
        continue;
      }
      // 422 is a witness saying the log does not extend what it cosigned: a fork, or our own rollback.
      const level = answer.status === 422 ? 'error' : 'warn';
      return this.failed(
        w,
        progress.failures,
        `${answer.status}: ${answer.body.split('\n')[0]!.slice(0, 200)}`,
        level,
      );
    }
    return this.failed(w, progress.failures, 'the witness answered 409 twice', 'warn');
  }

  private async hasCosignature(w: Witness, size: number): Promise<boolean> {
    return !!(await this.db('checkpoint_cosignatures')
      .where({ tree_size: size, witness_name: w.name })
      .first());
  }

  /** Keeps the lines of the answer that are this witness's valid cosignatures of the checkpoint. */
  private async cosigned(
    w: Witness,
    cp: SignedCheckpoint,
    oldSize: number,
    body: string,
    failures: number,
  ): Promise<Outcome> {
    let lines: Array<{ line: string; time: number }>;
    try {
      const answer = parseNote(`${cp.text}\n${body}`);
      lines = signaturesBy(answer, w.key).flatMap((sig) => {
        const time = verifyCosignature(w.key, cp.text, sig);
        return time ? [{ line: signatureLine(sig.name, sig.keyId, sig.signature), time }] : [];
      });
    } catch {
      lines = [];
    }
    const first = lines[0];
    if (!first) return this.failed(w, failures, 'a 200 without a valid cosignature of its key', 'warn');
    await this.db.transaction(async (trx) => {
      await trx('checkpoint_cosignatures')
        .insert({
          tree_size: cp.size,
          witness_name: w.name,
          line: first.line,
          cosigned_at: new Date(first.time * 1000),
        })
        .onConflict(['tree_size', 'witness_name'])
        .ignore();
      await trx('witness_progress')
        .insert({
          witness_name: w.name,
          vkey: w.vkey,
          cosigned_size: cp.size,
          failures: 0,
          next_attempt_at: null,
          last_error: null,
          last_cosigned_at: trx.fn.now(),
          updated_at: trx.fn.now(),
        })
        .onConflict('witness_name')
        .merge();
    });
    witnessRequests.inc({ witness: w.name, outcome: 'cosigned' });
    witnessLag.set({ witness: w.name }, 0);
    if (failures > 0) logger.info({ witness: w.name, size: cp.size, oldSize }, 'witness back: cosigned');
    return { outcome: 'cosigned', size: cp.size, oldSize };
  }

  /** Records a failed attempt; the next waits twice as long as the last, up to retryMaxMs. */
  private async failed(
    w: Witness,
    failures: number,
    reason: string,
    level: 'warn' | 'error',
  ): Promise<Outcome> {
    const wait = Math.min(this.opts.retryMaxMs, this.opts.pollMs * 2 ** Math.min(failures, 20));
    witnessRequests.inc({ witness: w.name, outcome: 'failed' });
    await this.saveProgress(w, {
      failures: failures + 1,
      next_attempt_at: new Date(Date.now() + wait),
      last_error: reason,
    });
    logger[level]({ witness: w.name, url: w.url, reason, retryInMs: wait }, 'witness did not cosign');
    return { outcome: 'failed', reason };
  }
}
