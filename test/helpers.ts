// Test helpers: the real app and real workers against this file's database and queue prefix.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Processor, Worker } from 'bullmq';
import supertest from 'supertest';
import { createApp } from '../api/app';
import type { AppDeps } from '../api/deps';
import type { JobView } from '../api/views/jobs';
import { closeDeps, depsFromEnv } from '../api/main';
import { createDb } from '../shared/platform/db/knex';
import type { Db } from '../shared/platform/db/knex';
import type { QueueName } from '../shared/platform/queues';
import { createRedis } from '../shared/platform/redis';
import { startWorker } from '../workers/pool';
import type { WorkerOptions } from '../workers/pool';
import { jobsProcessor } from '../workers/processors/jobs';

export interface TestApp {
  deps: AppDeps;
  request: ReturnType<typeof supertest>;
  close(): Promise<void>;
}

export function testApp(overrides: Partial<AppDeps> = {}): TestApp {
  const deps = { ...depsFromEnv(), ...overrides };
  // Built on first request, so a test may still adjust deps after testApp() returns.
  let app: ReturnType<typeof createApp> | undefined;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    app ??= createApp(deps);
    app(req as Parameters<typeof app>[0], res as Parameters<typeof app>[1]);
  };
  return { deps, request: supertest(handler), close: () => closeDeps(deps) };
}

export interface TestWorker {
  db: Db;
  worker: Worker;
  close(): Promise<void>;
}

/** A real worker for one queue in this process, on this file's queue prefix, with its own pool. */
export function testQueueWorker(
  queue: QueueName,
  processor: (db: Db) => Processor,
  opts: WorkerOptions = {},
): TestWorker {
  const db = createDb();
  const redis = createRedis('worker');
  const worker = startWorker(queue, processor(db), redis, opts);
  return {
    db,
    worker,
    close: async () => {
      await worker.close();
      redis.disconnect();
      await db.destroy();
    },
  };
}

/** A real `jobs` worker in this process, on this file's queue prefix. */
export const testJobsWorker = (): TestWorker => testQueueWorker('jobs', jobsProcessor);

export const sha256Of = async (text: string) => (await import('../shared/platform/crypto')).sha256Hex(text);

/** Polls a condition (for state that has no event to wait on), failing after timeoutMs. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The Authorization header of a Bearer credential (a job's access token, an agent or license key). */
export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/**
 * Long-polls a job until it reaches a terminal state, with what opens it: its access token (jt_…), or
 * the key that created it.
 */
export async function waitForJob(
  request: TestApp['request'],
  id: string,
  token: string,
  timeoutMs = 20_000,
): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await request.get(`/api/jobs/${id}?wait=5`).set(bearer(token)).expect(200);
    const job = res.body.job as JobView;
    if (['succeeded', 'failed', 'expired', 'cancelled'].includes(job.status)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}`);
  }
}

/**
 * A stored license of a tier, as a confirmed checkout issues it (prepaid credit included), for tests
 * that act as a licensee without going through a payment.
 */
export async function grantLicense(
  db: Db,
  tier: 'TRIAL' | 'Starter' | 'Business' | 'Enterprise',
  organization = `Org ${Math.random().toString(36).slice(2)}`,
): Promise<{ id: string; token: string; auth: { Authorization: string } }> {
  const { issueLicense } = await import('../shared/licensing/licenses');
  const { normalizeOrganization } = await import('../shared/licensing/organizations');
  const { newId } = await import('../shared/platform/ids');
  const now = new Date();
  return db.transaction(async (trx) => {
    const [checkout] = await trx('checkouts')
      .insert({
        id: newId('chk'),
        license_type: tier,
        organization,
        organization_key: normalizeOrganization(organization),
        email: 'licensee@example.test',
        usd_cents: 0,
        status: 'confirmed',
        settlement: tier === 'TRIAL' ? 'trial' : 'exact',
        settled_at: now,
        created_at: now,
        updated_at: now,
      })
      .returning('*');
    const { license, token } = await issueLicense(trx, checkout, now);
    return { id: license.id, token, auth: { Authorization: `Bearer ${token}` } };
  });
}

/** The app behind one trusted proxy hop (TRUST_PROXY=1): `X-Forwarded-For` names the client. */
export function behindProxy(app: TestApp): ReturnType<typeof supertest> {
  const proxied = createApp(app.deps, { trustProxy: 1 });
  return supertest((req: IncomingMessage, res: ServerResponse) =>
    proxied(req as Parameters<typeof proxied>[0], res as Parameters<typeof proxied>[1]),
  );
}

/**
 * Puts a production deployment's signing keys (hex seeds) in the trust root, as its operator does with
 * `npm run keys -- import` before the processes start: a production process refuses a key it lacks.
 */
export async function importProductionKeys(db: Db, seeds: { service: string; log?: string }): Promise<void> {
  const { signingKeyFromSeed } = await import('../shared/platform/crypto');
  const { importCurrentKey } = await import('../shared/platform/key-history');
  const publicKey = (hex: string) => signingKeyFromSeed(Buffer.from(hex, 'hex')).publicKey;
  const from = new Date();
  await importCurrentKey(db, {
    publicKey: publicKey(seeds.service),
    roles: ['package', 'receipt', 'license', 'attestation'],
    from,
  });
  if (seeds.log) await importCurrentKey(db, { publicKey: publicKey(seeds.log), roles: ['log'], from });
}
