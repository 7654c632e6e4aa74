// Privacy: the service takes only hashes. Private strings a client hashed as evidence — and those plain
// hashes, which the service salts — appear in no response, page, log line or database column.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logger } from '../../../shared/platform/log';
import { Queues } from '../../../shared/platform/queues';
import { createRedis } from '../../../shared/platform/redis';
import { sweepTargets } from '../../../workers/main';
import { Sweeper } from '../../../workers/sweeper';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { OPERATOR, actor, drive, event, evidence, prepare, testProver, waitForPackage } from './helpers';
import type { TestProver } from './helpers';
import { captureLogs } from '../../logs';

const secrets = [
  'Applicant: Jane Q. Doe, passport X1234567',
  'Screening note: matched sanctions list entry 0042, cleared by phone',
  'Reviewer memo: methodology v3 weights 0.4/0.6',
  'Internal threshold: exposure below 2500000 USD',
];
const secretHashes = secrets.map(evidence);
const actorNames = ['Jane Q. Doe', 'chief compliance officer Bob Roe'];

let app: TestApp;
let prover: TestProver;
let logLines: string[] = [];
const bodies: string[] = [];
let restore: () => void;

beforeAll(() => {
  // Every log line of this process (API, prover, sweeper) at the most verbose level.
  const capture = captureLogs(logger);
  logLines = capture.lines;
  restore = capture.stop;
  app = testApp();
  prover = testProver();
});
afterAll(async () => {
  restore();
  await prover.close();
  await app.close();
});

describe('a workflow run with private evidence', () => {
  it('leaves no private string or plain evidence hash anywhere', async () => {
    const keep = (res: { text: string }) => (bodies.push(res.text), res);
    const { workflowId, proofId } = await prepare(app.request, 'Compliance Review');
    // Named actors only as the client's own commitments; one evidence event per secret.
    for (const [i, hash] of secretHashes.slice(0, 1).entries()) {
      keep(
        await event(app.request, {
          workflowId,
          stage: 'application',
          action: 'attach_evidence',
          actorCommitment: actor(actorNames[i]!),
          evidenceHash: hash,
        }).expect(200),
      );
    }
    for (const reply of await drive(app.request, workflowId, 'Compliance Review', {
      secrets: secrets.slice(1),
    }))
      bodies.push(JSON.stringify(reply));
    // A rejected event and a bad one are logged too; neither may echo what was sent.
    keep(
      await event(app.request, {
        workflowId,
        stage: 'screening',
        action: 'attach_evidence',
        actorCommitment: actor(actorNames[1]!),
        evidenceHash: secretHashes[3]!,
      }),
    );
    keep(
      await app.request
        .post('/api/proof-workflows/event')
        .set('Authorization', OPERATOR)
        .send({ workflowId, stage: 'screening', action: 'approve', actorCommitment: secrets[0] }),
    );

    const verdict = await waitForPackage(app.request, proofId);
    expect(verdict.notAltered).toBe(true);
    bodies.push(JSON.stringify(verdict));
    keep(await app.request.post('/api/proof-workflows/verify').send({ package: verdict.package }));
    keep(await app.request.get(`/api/proof-workflows/status?proofId=${proofId}`));
    keep(await app.request.get('/api/proof-workflows/status'));
    keep(await app.request.get(`/proof-workflows/verify/${proofId}/`).expect(200));

    // A sweep over the tables reads rows too; then dump every table to text.
    const redis = createRedis('api');
    const queues = new Queues(redis);
    await new Sweeper(app.deps.db, queues, redis, sweepTargets).sweep();
    await queues.close();
    redis.disconnect();

    const tables = (await app.deps
      .db('information_schema.tables')
      .select('table_name')
      .where({ table_schema: 'public', table_type: 'BASE TABLE' })) as Array<{ table_name: string }>;
    expect(tables.map((t) => t.table_name)).toEqual(
      expect.arrayContaining(['workflows', 'audit_entries', 'proof_packages']),
    );
    const dump: string[] = [];
    for (const { table_name } of tables) {
      const rows = await app.deps.db(table_name).select('*');
      dump.push(
        JSON.stringify(rows, (_k, v: unknown) =>
          v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer'
            ? Buffer.from((v as { data: number[] }).data).toString('hex')
            : v,
        ),
      );
    }

    const places: Record<string, string> = {
      responses: bodies.join('\n'),
      logs: logLines.join(''),
      database: dump.join('\n'),
    };
    expect(logLines.join('').length).toBeGreaterThan(1000);
    expect(places.database).toContain(proofId);
    for (const [where, text] of Object.entries(places)) {
      for (const s of [...secrets, ...actorNames, ...secretHashes]) {
        expect(text.includes(s), `${where} contains ${s.slice(0, 24)}`).toBe(false);
      }
    }
    // The private handle never reaches the public surfaces.
    const publicText = bodies.filter((b) => !b.includes('"workflowId"')).join('\n');
    expect(publicText).not.toContain(workflowId);
  });
});
