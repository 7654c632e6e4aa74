// Blind-policy test helpers: distinctive private inputs, a real proofs worker, waiting on a proof, and
// text dumps of every place a private value could leak to (database, logs).
import type { Worker } from 'bullmq';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { logger } from '../../shared/platform/log';
import { captureLogs as captureProcessLogs } from '../logs';
import { Queues } from '../../shared/platform/queues';
import { createRedis } from '../../shared/platform/redis';
import type { PolicyId } from '../../shared/zk/index';
import { startWorker } from '../../workers/pool';
import { proofsProcessor } from '../../workers/prover/main';
import type { TestApp } from '../helpers';
import { sampleCredential, sampleQueryInput } from '../../shared/credentials/sample';

/** Values unlikely to appear anywhere by chance: a hit in a dump is a leak. */
export const privateInputs: Record<PolicyId, Record<string, unknown>> = {
  threshold: { value: '7391402581', threshold: '6173051947' },
  range: { value: '4826159037', low: '3917264085', high: '5938172640' },
  membership: { value: '8264019375', set: ['1739204856', '8264019375', '2958371046', '6402817593'] },
  credential: sampleQueryInput,
};

export const secretValues = (policy: PolicyId): string[] =>
  policy === 'credential'
    ? // The credential's own long values: its revocation nonce, its signature and its claim hash.
      [
        sampleCredential.credentialStatus.revocationNonce,
        sampleCredential.proof.signature.S,
        sampleCredential.proof.signature.R8[0],
        sampleCredential.proof.claimHash,
      ]
    : Object.values(privateInputs[policy]).flatMap((v) => (Array.isArray(v) ? v.map(String) : [String(v)]));

export interface ProofsWorker {
  db: Db;
  worker: Worker;
  close(): Promise<void>;
}

/** A real `proofs` worker in this process, on this file's queue prefix. */
export function testProofsWorker(concurrency = 2): ProofsWorker {
  const db = createDb();
  const redis = createRedis('worker');
  const queueRedis = createRedis('worker');
  const queues = new Queues(queueRedis);
  const worker = startWorker('proofs', proofsProcessor(db, queues), redis, { concurrency });
  return {
    db,
    worker,
    close: async () => {
      await worker.close();
      await queues.close();
      redis.disconnect();
      queueRedis.disconnect();
      await db.destroy();
    },
  };
}

export interface ProofBody {
  id: string;
  status: string;
  policy: string;
  publicSignals: string[] | null;
  proof: Record<string, unknown> | null;
  commitments: Record<string, string>;
  attempts: number;
  backend: string | null;
  timings: Record<string, number | null>;
  error: { code: string; message: string } | null;
}

/** Long-polls the status route until the proof ends. */
export async function waitForProof(
  request: TestApp['request'],
  id: string,
  timeoutMs = 30_000,
): Promise<ProofBody> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const wait = Math.max(0, Math.min(10, Math.floor((deadline - Date.now()) / 1000)));
    const res = await request
      .get(`/api/proof-workflows/blind-policy/status?proofId=${id}&wait=${wait}`)
      .expect(200);
    const proof = res.body.proof as ProofBody;
    if (proof.status === 'succeeded' || proof.status === 'failed') return proof;
    if (Date.now() > deadline) throw new Error(`proof ${id} still ${proof.status}`);
  }
}

/** Every row of every table in the public schema, as JSON text. */
export async function dumpDatabase(db: Db): Promise<string> {
  const tables = (await db('pg_tables').where({ schemaname: 'public' }).pluck('tablename')) as string[];
  const parts: string[] = [];
  for (const table of tables) {
    const { rows } = await db.raw(`select row_to_json(t)::text as j from "${table}" t`);
    parts.push(`-- ${table}`, ...(rows as Array<{ j: string }>).map((r) => r.j));
  }
  return parts.join('\n');
}

/** Turns the process logger on at trace level and collects every line it writes. */
export const captureLogs = () => captureProcessLogs(logger);
