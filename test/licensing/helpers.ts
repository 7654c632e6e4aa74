// Helpers of the commercial tests: log capture, problem assertions and a checkouts worker in process.
import { captureLogs as captureProcessLogs } from '../logs';
import { expect } from 'vitest';
import { newWallet } from '../exchange/fixtures';
import type { Wallet } from '../exchange/fixtures';
import type { TestApp } from '../helpers';

/** Captures every log line the process logger writes (at trace level) until stop(). */
export async function captureLogs(): Promise<{ lines: string[]; stop(): void }> {
  const { logger } = await import('../../shared/platform/log'); // after the test has set the environment
  return captureProcessLogs(logger);
}

export function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
}

/** A real `checkouts` worker in this process, on this file's queue prefix. */
export async function testCheckoutsWorker() {
  const { createDb } = await import('../../shared/platform/db/knex');
  const { createRedis } = await import('../../shared/platform/redis');
  const { startWorker } = await import('../../workers/pool');
  const { checkoutsProcessor } = await import('../../workers/processors/licensing');
  const db = createDb();
  const redis = createRedis('worker');
  const worker = startWorker('checkouts', checkoutsProcessor(db), redis);
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

/** What a TRIAL checkout carries: a fresh challenge for the wallet, signed by it. */
export async function trialProof(request: TestApp['request'], wallet: Wallet = newWallet()) {
  const res = await request
    .post('/api/v1/commercial/trial/challenge')
    .send({ wallet: wallet.publicKey })
    .expect(201);
  const challenge = res.body.challenge as string;
  return { wallet: wallet.publicKey, challenge, signature: wallet.sign(challenge) };
}
