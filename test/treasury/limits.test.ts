// The per-period spending limit under concurrent requests, approvals and rejections: the allowance is
// taken in one serial order (each accepted request saw exactly the ones before it), refusals carry the
// allowance they were checked against, and what is held never exceeds the limit — at any moment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalMessage } from '../../shared/treasury/commitments';
import { eventually, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, wallet } from '../governance/helpers';
import type { Wallet } from '../governance/helpers';

const LIMIT = 1_000_000n;
const ASSET = 'USDC-SOL';

let app: TestApp;
const signers = [wallet(), wallet(), wallet()];
let roomId: string;

interface Allowance {
  limit: string;
  committed: string;
  remaining: string;
  periodStart: string;
  periodEnd: string;
}
interface Outcome {
  amount: bigint;
  status: number;
  body: {
    code?: string;
    requestId: string;
    requestHash: string;
    allowance: Allowance;
  };
}

beforeAll(async () => {
  app = testApp();
  roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Treasury', members: signers.map((w) => w.address) })
      .expect(201)
  ).body.roomId;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'signers', name: 'Signers', members: signers.map((w) => w.address), threshold: 2 })
    .expect(201);
  // The longest period there is: no period boundary falls inside this file's run.
  await app.request
    .post('/api/treasury/limits')
    .set('Authorization', OPERATOR)
    .send({ roomId, asset: ASSET, periodSeconds: 366 * 24 * 3600, limit: String(LIMIT) })
    .expect(200);
});
afterAll(() => app.close());

const requestSpend = (amount: bigint, asset = ASSET) =>
  app.request
    .post('/api/treasury/requests')
    .set('Authorization', OPERATOR)
    .send({
      roomId,
      committee: 'signers',
      operation: asset.startsWith('token:') ? 'transfer' : 'spend',
      asset,
      amount: String(amount),
      recipient: 'VendorWallet1',
      purposeHash: 'c'.repeat(64),
    });

/** All at once: the requests reach the API together and contend for the one allowance. */
async function burst(amounts: bigint[]): Promise<Outcome[]> {
  const replies = await Promise.all(amounts.map((a) => requestSpend(a)));
  return replies.map((r, i) => ({ amount: amounts[i]!, status: r.status, body: r.body }));
}

const decide = (id: string, hash: string, w: Wallet, decision: 'approve' | 'reject') =>
  app.request.post(`/api/treasury/requests/${id}/approvals`).send({
    walletPublicKey: w.address,
    decision,
    signature: w.sign(approvalMessage(id, hash, decision)),
  });

/** What the limit holds right now: pending and approved requests, straight from the table. */
async function held(): Promise<bigint> {
  const row = (await app.deps
    .db('treasury_requests')
    .where({ room_id: roomId, asset: ASSET })
    .whereIn('status', ['pending', 'approved'])
    .sum({ total: 'amount' })
    .first()) as { total: string | null };
  return BigInt(row.total ?? '0');
}

/** Samples what is held until stopped; the highest value seen is the overspend check "at any moment". */
function sampler() {
  let stop = false;
  let max = 0n;
  let samples = 0;
  const loop = (async () => {
    while (!stop) {
      const h = await held();
      if (h > max) max = h;
      samples += 1;
    }
  })();
  return {
    done: async () => {
      stop = true;
      await loop;
      return { max, samples };
    },
  };
}

/**
 * Every reply is an acceptance or a refusal with the allowance; the acceptances form one serial chain
 * (each saw exactly the committed sum of those before it), and each refusal was checked against a state of
 * that chain in which its amount did not fit.
 */
function checkSerial(outcomes: Outcome[], start: bigint) {
  for (const o of outcomes) {
    expect([201, 422], JSON.stringify(o.body)).toContain(o.status);
    const a = o.body.allowance;
    expect(a.limit).toBe(String(LIMIT));
    expect(BigInt(a.committed) + BigInt(a.remaining)).toBe(LIMIT);
  }
  const accepted = outcomes
    .filter((o) => o.status === 201)
    .sort((x, y) => Number(BigInt(x.body.allowance.committed) - BigInt(y.body.allowance.committed)));
  const refused = outcomes.filter((o) => o.status === 422);
  let committed = start;
  const states = [committed];
  for (const o of accepted) {
    expect(BigInt(o.body.allowance.committed)).toBe(committed);
    expect(o.amount).toBeLessThanOrEqual(BigInt(o.body.allowance.remaining));
    committed += o.amount;
    states.push(committed);
  }
  expect(committed).toBeLessThanOrEqual(LIMIT);
  for (const o of refused) {
    expect(o.body.code).toBe('spending_limit_exceeded');
    expect(o.amount).toBeGreaterThan(BigInt(o.body.allowance.remaining));
    expect(states).toContain(BigInt(o.body.allowance.committed));
    // What remains at the end is no more than what remained then: nothing refused would fit now either.
    expect(o.amount).toBeGreaterThan(LIMIT - committed);
  }
  return { accepted, refused, committed };
}

describe('spending limits under concurrency', () => {
  let first: ReturnType<typeof checkSerial>;

  it('never overspends when many requests together exceed the allowance', async () => {
    // 24 requests totalling about 2.6× the limit, of uneven sizes so that late small ones may still fit.
    const amounts = Array.from({ length: 24 }, (_, i) => 40_000n + BigInt((i * 37_123) % 160_000));
    expect(amounts.reduce((s, a) => s + a, 0n)).toBeGreaterThan(2n * LIMIT);
    const watch = sampler();
    const outcomes = await burst(amounts);
    const seen = await watch.done();
    first = checkSerial(outcomes, 0n);
    expect(first.accepted.length).toBeGreaterThan(0);
    expect(first.refused.length).toBeGreaterThan(0);
    expect(await held()).toBe(first.committed);
    expect(seen.samples).toBeGreaterThan(0);
    expect(seen.max).toBeLessThanOrEqual(LIMIT);
    const limits = await app.request
      .get(`/api/treasury/limits?roomId=${roomId}`)
      .set('Authorization', OPERATOR)
      .expect(200);
    expect(limits.body.limits[0]).toMatchObject({
      committed: String(first.committed),
      remaining: String(LIMIT - first.committed),
    });
  });

  it('keeps the limit while approvals, rejections and new requests race', async () => {
    const [toReject, toApprove] = [
      first.accepted.filter((_, i) => i % 2 === 0),
      first.accepted.filter((_, i) => i % 2 === 1),
    ];
    const released = toReject.reduce((s, o) => s + o.amount, 0n);
    const watch = sampler();
    const decisions = Promise.all([
      // Every signer approves at once: the second approval decides, the third finds it decided.
      ...toApprove.map((o) =>
        Promise.all(signers.map((w) => decide(o.body.requestId, o.body.requestHash, w, 'approve'))),
      ),
      ...toReject.map((o) =>
        Promise.all(
          signers.slice(0, 2).map((w) => decide(o.body.requestId, o.body.requestHash, w, 'reject')),
        ),
      ),
    ]);
    // New requests that want more than is released, competing with the rejections that release it.
    const fresh = Array.from({ length: 16 }, (_, i) => 30_000n + BigInt((i * 52_711) % 120_000));
    expect(fresh.reduce((s, a) => s + a, 0n)).toBeGreaterThan(released + LIMIT - first.committed);
    const [votes, outcomes] = await Promise.all([decisions, burst(fresh)]);
    const seen = await watch.done();

    const statuses = votes.slice(0, toApprove.length).map((replies) => replies.map((r) => r.status).sort());
    for (const s of statuses) expect(s).toEqual([200, 200, 409]);
    for (const replies of votes.slice(toApprove.length))
      expect(replies.map((r) => r.status)).toEqual([200, 200]);
    const rows = (await app.deps.db('treasury_requests').whereIn(
      'id',
      first.accepted.map((o) => o.body.requestId),
    )) as Array<{ id: string; status: string; package: { decisions: unknown[] } | null }>;
    for (const row of rows) {
      const approve = toApprove.some((o) => o.body.requestId === row.id);
      expect(row.status).toBe(approve ? 'approved' : 'rejected');
      expect(row.package?.decisions).toHaveLength(2);
    }

    // The fresh requests were checked against a moving target: released amounts may or may not have been
    // seen. Each refusal still did not fit what it saw; what is held never passed the limit.
    for (const o of outcomes) {
      expect([201, 422]).toContain(o.status);
      const a = o.body.allowance;
      expect(BigInt(a.committed) + BigInt(a.remaining)).toBe(LIMIT);
      if (o.status === 201) expect(o.amount).toBeLessThanOrEqual(BigInt(a.remaining));
      else expect(o.amount).toBeGreaterThan(BigInt(a.remaining));
    }
    const taken = outcomes.filter((o) => o.status === 201).reduce((s, o) => s + o.amount, 0n);
    expect(await held()).toBe(first.committed - released + taken);
    expect(await held()).toBeLessThanOrEqual(LIMIT);
    expect(seen.max).toBeLessThanOrEqual(LIMIT);
  });

  it('records a request in the period it was checked against, even after waiting for the lock', async () => {
    // Another transaction holds the limit row; the request waits behind it. A request stamped with the
    // moment its transaction began, rather than the moment of its check, would count in a period it was
    // never checked against whenever the wait crossed a period boundary.
    const db = app.deps.db;
    const token = 'token:GRANT';
    await app.request
      .post('/api/treasury/limits')
      .set('Authorization', OPERATOR)
      .send({ roomId, asset: token, periodSeconds: 3600, limit: '5000' })
      .expect(200);
    const blocker = await db.transaction();
    let releasedAt = 0;
    let reply: ReturnType<typeof requestSpend> | undefined;
    try {
      await blocker('spending_limits').where({ room_id: roomId, asset: token }).forUpdate().first();
      reply = requestSpend(1000n, token);
      void reply.then(() => undefined);
      await eventually(async () => {
        const { rows } = (await db.raw(
          `select count(*)::int as n from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        )) as { rows: Array<{ n: number }> };
        return rows[0]!.n > 0;
      }, 5000);
      await new Promise((r) => setTimeout(r, 300));
      releasedAt = Date.now();
    } finally {
      await blocker.commit();
    }
    const res = (await reply)!;
    expect(res.status).toBe(201);
    const row = (await db('treasury_requests').where('id', res.body.requestId).first()) as {
      created_at: Date;
      created_at_iso: string;
    };
    expect(row.created_at.getTime()).toBeGreaterThanOrEqual(releasedAt);
    expect(row.created_at.toISOString()).toBe(row.created_at_iso);
    const { periodStart, periodEnd } = res.body.allowance as Allowance;
    expect(row.created_at.getTime()).toBeGreaterThanOrEqual(Date.parse(periodStart));
    expect(row.created_at.getTime()).toBeLessThan(Date.parse(periodEnd));
  });
});
