// What a caller without a credential can make the web spend on verification: a made-up package is
// refused at its signature, before any of the trustees' arithmetic; a ceremony is read, not recomputed;
// and whatever is costly runs in the bounded verify pool, where one network holds only its share and a
// full pool answers 503 at once instead of freezing the event loop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../shared/platform/errors';
import { registry } from '../../shared/platform/metrics';
import { OffloadPool } from '../../shared/platform/offload';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR } from '../governance/helpers';
import { TRUSTEES as N, forgedPackage, fullCeremonyRows, trustees } from '../fixtures/trustee-room';

let app: TestApp;

beforeAll(() => {
  app = testApp();
});
afterAll(async () => {
  await app.close();
});

/** CPU this process spent (user and system, ms) while `fn` ran: what the request cost the web. */
async function cpuOf<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const before = process.cpuUsage();
  const result = await fn();
  const used = process.cpuUsage(before);
  return { result, ms: (used.user + used.system) / 1000 };
}

describe('a governance package the service did not sign', () => {
  it('is refused at its signature: none of the trustees’ arithmetic runs, through the API or the page', async () => {
    const pkg = forgedPackage();
    expect(JSON.stringify(pkg).length).toBeGreaterThan(40_000);
    // Warm: the route's first request loads what every later one shares.
    await app.request.post('/api/governance/verify').send({ package: pkg }).expect(200);
    const { result: res, ms } = await cpuOf(() =>
      app.request.post('/api/governance/verify').send({ package: pkg }).expect(200),
    );
    expect(res.body).toMatchObject({ valid: false, signatureValid: false, ballotsValid: false });
    const codes = (res.body.reasons as Array<{ code: string }>).map((r) => r.code);
    // Refused before the dealings are looked at: no dealing, joint key or ballot check reports.
    expect(codes).toContain('not_checked');
    expect(codes).not.toContain('dealing_invalid');
    expect(codes).not.toContain('ballot_key_mismatch');
    // Sixteen dealings at threshold 16 took seconds of curve arithmetic; a signature check takes ms.
    expect(ms).toBeLessThan(80);

    const paste = () =>
      app.request
        .post('/proof-workflows/verify/')
        .type('form')
        .send({ package: JSON.stringify(pkg) })
        .expect(200);
    await paste();
    const page = await cpuOf(paste);
    expect(page.result.text).toContain('not_checked');
    expect(page.ms).toBeLessThan(150);
  }, 60_000);
});

describe('a room’s key ceremony, read', () => {
  it('costs its rows, not its arithmetic: 16 dealings, 256 complaints, 256 answers', async () => {
    const roomId = (
      await app.request
        .post('/api/governance/rooms')
        .set('Authorization', OPERATOR)
        .send({ name: 'Board' })
        .expect(201)
    ).body.roomId as string;
    const room = trustees(roomId);
    await app.request
      .post(`/api/governance/rooms/${roomId}/trustees`)
      .set('Authorization', OPERATOR)
      .send({ threshold: N, trustees: room.members.map(({ index: _i, ...m }) => m) })
      .expect(201);
    // Every trustee complains about every dealing and every dealer answers with the share in the open:
    // the most a ceremony of 16 holds. Written as the routes would have taken them (each answer checked).
    const rows = fullCeremonyRows(roomId, room);
    await app.deps.db('trustee_messages').insert(rows);
    await app.request.get(`/api/governance/rooms/${roomId}/trustees`).expect(200);
    const { result: res, ms } = await cpuOf(() =>
      app.request.get(`/api/governance/rooms/${roomId}/trustees`).expect(200),
    );
    expect(res.body.answers).toHaveLength(N * N);
    expect(res.body.qualified).toHaveLength(N);
    expect(res.body.pendingComplaints).toEqual([]);
    // Rechecking the 256 answers' shares is 256 × 17 scalar multiplications, seconds of CPU.
    expect(ms).toBeLessThan(150);
  }, 120_000);
});

describe('the verify pool', () => {
  const tasks = new URL('../fixtures/offload-tasks.ts', import.meta.url);
  const shed = async () =>
    (await registry.getSingleMetric('px_http_shed_total')!.get()).values.find(
      (v) => v.labels.reason === 'verify_pool',
    )?.value ?? 0;

  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => {
        throw new Error('was taken');
      },
      (err: unknown) => {
        expect(err).toBeInstanceOf(AppError);
        expect(err).toMatchObject({ status: 503, code: 'overloaded', headers: { 'Retry-After': '1' } });
      },
    );

  it('holds one owner to its share, the pool to its size, and answers a refusal at once', async () => {
    const pool = new OffloadPool(tasks, { threads: 2, queue: 3, perOwner: 2, timeoutMs: 30_000 });
    const flag = new SharedArrayBuffer(4);
    try {
      const before = await shed();
      const a1 = pool.run('hold', flag, 'net:a');
      const a2 = pool.run('hold', flag, 'net:a');
      // A third from the same network: refused, while another network is taken.
      await refusal(pool.run('echo', 1, 'net:a'));
      const b1 = pool.run('hold', flag, 'net:b');
      // Three held in all: the pool is full for everyone.
      await refusal(pool.run('echo', 2, 'net:c'));
      expect(pool.size).toBe(3);
      expect((await shed()) - before).toBe(2);
      Atomics.store(new Int32Array(flag), 0, 1);
      Atomics.notify(new Int32Array(flag), 0);
      expect(await Promise.all([a1, a2, b1])).toEqual(['released', 'released', 'released']);
      // Room again, for the network that was refused too.
      expect(await pool.run('echo', 3, 'net:a')).toBe(3);
      expect(pool.size).toBe(0);
    } finally {
      await pool.close();
    }
  }, 30_000);

  it('stops a check that runs past its time and frees its place', async () => {
    // The limit counts from when the check is handed to the pool, a thread's start included: long
    // enough here for a thread to start on a loaded host (a stopped check's thread is replaced).
    const pool = new OffloadPool(tasks, { threads: 1, queue: 4, perOwner: 4, timeoutMs: 3000 });
    try {
      expect(await pool.run('echo', 'first', 'net:a')).toBe('first');
      await refusal(pool.run('hold', new SharedArrayBuffer(4), 'net:a'));
      expect(pool.size).toBe(0);
      expect(await pool.run('echo', 'next', 'net:a')).toBe('next');
    } finally {
      await pool.close();
    }
  }, 30_000);
});
