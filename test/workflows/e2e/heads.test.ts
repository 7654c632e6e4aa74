// The chain head kept on the workflow row: concurrent appends (in one process, and in two that each
// keep their own copy of the head) make one linear chain with nothing lost, and verify — which
// recomputes the chain from the rows — fails for a changed, deleted or reordered row and for a head
// that disagrees with the rows, whether the workflow row's or the signed package's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../../../shared/platform/db/knex';
import type { Db } from '../../../shared/platform/db/knex';
import { Queues } from '../../../shared/platform/queues';
import { createRedis } from '../../../shared/platform/redis';
import { verifyRecords } from '../../../shared/workflows/package';
import { loadRecords } from '../../../shared/workflows/load';
import { recordEvent } from '../../../shared/workflows/events';
import { findTemplate } from '../../../shared/workflows/templates';
import type { WorkflowTemplate } from '../../../shared/workflows/templates';
import * as digests from '../../../migrations/20261123001000_workflow_stage_digests';
import { testApp } from '../../helpers';
import type { TestApp } from '../../helpers';
import { actor, drive, event, evidence, prepare, testProver, waitForPackage } from './helpers';
import type { TestProver } from './helpers';

let app: TestApp;
let prover: TestProver;
/** A second process's view: its own database handle, so its own appender and its own kept heads. */
let otherDb: Db;
let otherQueues: Queues;
let otherRedis: ReturnType<typeof createRedis>;
const operator = { owner: 'operator', operator: true };

beforeAll(() => {
  app = testApp();
  prover = testProver();
  otherDb = createDb();
  otherRedis = createRedis('api');
  otherQueues = new Queues(otherRedis);
});
afterAll(async () => {
  await otherQueues.close();
  otherRedis.disconnect();
  await otherDb.destroy();
  await prover.close();
  await app.close();
});

const attach = (workflowId: string, i: number) => ({
  workflowId,
  stage: 'application',
  action: 'attach_evidence' as const,
  actorCommitment: actor(`clerk-${i}`),
  evidenceHash: evidence(`invoice ${i}`),
});

async function workflowRow(workflowId: string) {
  return (await app.deps
    .db('workflows')
    .where('id', workflowId)
    .first('chain_head', 'entry_count', 'status')) as {
    chain_head: string;
    entry_count: number;
    status: string;
  };
}

/** The trail is one linear chain, seq 0..n-1, each entry linked to the one before, ending at the stored head. */
async function expectLinear(workflowId: string, proofId: string, template: WorkflowTemplate, n: number) {
  const records = await loadRecords(app.deps.db, workflowId);
  const trail = records.flatMap((r) => r.auditTrail).sort((a, b) => a.seq - b.seq);
  expect(trail.map((e) => e.seq)).toEqual(Array.from({ length: n }, (_, i) => i));
  for (let i = 1; i < trail.length; i++) expect(trail[i]!.prevHash).toBe(trail[i - 1]!.entryHash);
  expect(verifyRecords({ template, proofId, records })).toMatchObject({ notAltered: true, existed: true });
  const row = await workflowRow(workflowId);
  expect(row).toMatchObject({ chain_head: trail.at(-1)!.entryHash, entry_count: n });
  return trail;
}

const verify = async (proofId: string) =>
  (await app.request.post('/api/proof-workflows/verify').send({ proofId }).expect(200)).body;

function expectRefused(v: Awaited<ReturnType<typeof verify>>, code: string) {
  expect(v).toMatchObject({
    notAltered: false,
    existed: false,
    completed: false,
    approvalsMet: false,
    sequenceRespected: false,
  });
  expect(v.reasons.map((r: { code: string }) => r.code)).toContain(code);
}

describe('appends', () => {
  const vendor = findTemplate('Vendor Onboarding') as WorkflowTemplate;

  it('fifty at once on one workflow make one linear chain, none lost, none forked', async () => {
    const { workflowId, proofId } = await prepare(app.request, vendor.name);
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, i) => event(app.request, attach(workflowId, i))),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    const trail = await expectLinear(workflowId, proofId, vendor, 50);
    // Each reply names its own entry, and the entries are the fifty posted, once each.
    expect(new Set(replies.map((r) => r.body.entry.entryHash))).toEqual(
      new Set(trail.map((e) => e.entryHash)),
    );
    expect(new Set(trail.map((e) => e.actorCommitment)).size).toBe(50);
    const v = await verify(proofId);
    expect(v).toMatchObject({ notAltered: true, existed: true, completed: false, chain: { length: 50 } });
  });

  it('from two processes at once, each keeping its own head, still make one chain', async () => {
    const { workflowId, proofId } = await prepare(app.request, vendor.name);
    // Both processes know the head first, so both start from a copy the other will make stale.
    await event(app.request, attach(workflowId, 0)).expect(200);
    await recordEvent(otherDb, otherQueues, attach(workflowId, 1), operator);
    const replies = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        i % 2 === 0
          ? event(app.request, attach(workflowId, i + 2)).then((r) => {
              if (r.status !== 200) throw new Error(JSON.stringify(r.body));
              return r.body.entry.seq as number;
            })
          : recordEvent(otherDb, otherQueues, attach(workflowId, i + 2), operator).then((r) => r.entry.seq),
      ),
    );
    expect(replies.filter((r) => r.status === 'rejected')).toEqual([]);
    const seqs = replies.map((r) => (r as PromiseFulfilledResult<number>).value).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 50 }, (_, i) => i + 2));
    await expectLinear(workflowId, proofId, vendor, 52);
  });

  it('decide on the rows, not on a stale kept head', async () => {
    const { workflowId } = await prepare(app.request, vendor.name);
    await event(app.request, attach(workflowId, 0)).expect(200);
    // Another process closes the application stage; this process's kept head still has it open.
    await recordEvent(
      otherDb,
      otherQueues,
      { workflowId, stage: 'application', action: 'submit', actorCommitment: actor('vendor') },
      operator,
    );
    // Valid on the stale head, refused on the rows: nothing written.
    const late = await event(app.request, attach(workflowId, 1));
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('out_of_sequence');
    expect((await workflowRow(workflowId)).entry_count).toBe(2);
    // Refused on the stale head, valid on the rows: accepted.
    const next = await event(app.request, {
      workflowId,
      stage: 'due_diligence',
      action: 'attach_evidence',
      actorCommitment: actor('analyst'),
      evidenceHash: evidence('report'),
    });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect(next.body.entry.seq).toBe(2);
  });

  it('count exactly the required approvals when approvers race from two processes', async () => {
    const treasury = findTemplate('Treasury Approval') as WorkflowTemplate;
    const { workflowId, proofId } = await prepare(app.request, treasury.name);
    await drive(app.request, workflowId, treasury.name, { until: 'signer_approval' });
    const approve = (i: number) => ({
      workflowId,
      stage: 'signer_approval',
      action: 'approve' as const,
      actorCommitment: actor(`signer-${i}`),
    });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2 === 0
          ? event(app.request, approve(i)).then((r) => (r.status === 200 ? 'ok' : r.body.code))
          : recordEvent(otherDb, otherQueues, approve(i), operator).then(
              () => 'ok',
              (err: { code?: string }) => err.code,
            ),
      ),
    );
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(2);
    expect(outcomes.filter((o) => o !== 'ok')).toEqual(Array(6).fill('out_of_sequence'));
    const records = await loadRecords(app.deps.db, workflowId);
    expect(verifyRecords({ template: treasury, proofId, records }).notAltered).toBe(true);
    expect(records[2]).toMatchObject({ stage: 'signer_approval', status: 'completed' });
  });

  it('cost one statement each while the head is kept, and read the trail only to close a stage', async () => {
    const { workflowId } = await prepare(app.request, vendor.name);
    const statements: string[] = [];
    const seen = (q: { sql: string }) => statements.push(q.sql);
    app.deps.db.on('query', seen);
    try {
      for (let i = 0; i < 5; i++) await event(app.request, attach(workflowId, i)).expect(200);
      expect(statements).toHaveLength(5);
      expect(statements.every((sql) => sql.startsWith('with i as'))).toBe(true);
      // Closing the stage needs its entry hashes: one read of the head with them, then the write.
      statements.length = 0;
      await event(app.request, {
        workflowId,
        stage: 'application',
        action: 'submit',
        actorCommitment: actor('vendor'),
      }).expect(200);
      expect(statements).toHaveLength(2);
      expect(statements[0]).toContain('open_trail');
    } finally {
      app.deps.db.off('query', seen);
    }
  });

  it('reply with the entries the event added, not the whole trail', async () => {
    const { workflowId } = await prepare(app.request, vendor.name);
    await event(app.request, attach(workflowId, 0)).expect(200);
    const res = await event(app.request, attach(workflowId, 1)).expect(200);
    expect(res.body.stage.auditTrail).toEqual([res.body.entry]);
    expect(res.body.chainHead).toBe(res.body.entry.entryHash);
  });
});

describe('the stage digests', () => {
  it('are what the migration backfills from the entries', async () => {
    const treasury = findTemplate('Treasury Approval') as WorkflowTemplate;
    const { workflowId } = await prepare(app.request, treasury.name);
    await drive(app.request, workflowId, treasury.name, { until: 'signer_approval' });
    const send = (action: string, who: string, withEvidence = false) =>
      event(app.request, {
        workflowId,
        stage: 'signer_approval',
        action,
        actorCommitment: actor(who),
        ...(withEvidence ? { evidenceHash: evidence(`${who} memo`) } : {}),
      }).expect(200);
    // An approval, a change request (which voids it), new evidence, and one approval of the new round.
    await send('approve', 'signer-a');
    await send('request_changes', 'signer-b');
    await send('attach_evidence', 'treasurer', true);
    await send('approve', 'signer-c');
    const read = () =>
      app.deps
        .db('workflow_stages')
        .where('workflow_id', workflowId)
        .orderBy('idx')
        .select('stage', 'approvers', 'has_evidence', 'policy_evidence');
    const live = await read();
    expect(live[2]).toMatchObject({ approvers: [actor('signer-c')], has_evidence: true });
    await digests.down(app.deps.db);
    await digests.up(app.deps.db);
    expect(await read()).toEqual(live);
    // A process that never saw this workflow decides the next approval on the backfilled rows.
    const last = await recordEvent(
      otherDb,
      otherQueues,
      { workflowId, stage: 'signer_approval', action: 'approve', actorCommitment: actor('signer-d') },
      operator,
    );
    expect(last.stage.status).toBe('completed');
  });
});

describe('verify recomputes the chain from the rows', () => {
  /** A workflow with three entries, still open: no signed package, only the rows and the stored head. */
  async function open() {
    const vendor = findTemplate('Vendor Onboarding') as WorkflowTemplate;
    const ids = await prepare(app.request, vendor.name);
    for (let i = 0; i < 3; i++) await event(app.request, attach(ids.workflowId, i)).expect(200);
    expect(await verify(ids.proofId)).toMatchObject({ notAltered: true, existed: true });
    return ids;
  }
  const entries = (workflowId: string) => app.deps.db('audit_entries').where('workflow_id', workflowId);

  it('fails for a changed row', async () => {
    const { workflowId, proofId } = await open();
    await entries(workflowId)
      .where('seq', 1)
      .update({ actor_commitment: actor('someone else') });
    const v = await verify(proofId);
    expectRefused(v, 'entry_hash_mismatch');
    expect(v.altered).toMatchObject({ stage: 'application', seq: 1 });
  });

  it('fails for a deleted row in the middle', async () => {
    const { workflowId, proofId } = await open();
    await entries(workflowId).where('seq', 1).delete();
    expectRefused(await verify(proofId), 'sequence_gap');
  });

  it('fails for reordered rows', async () => {
    const { workflowId, proofId } = await open();
    await app.deps.db.transaction(async (trx) => {
      await trx('audit_entries').where({ workflow_id: workflowId, seq: 0 }).update({ seq: -1 });
      await trx('audit_entries').where({ workflow_id: workflowId, seq: 1 }).update({ seq: 0 });
      await trx('audit_entries').where({ workflow_id: workflowId, seq: -1 }).update({ seq: 1 });
    });
    expectRefused(await verify(proofId), 'chain_broken');
  });

  it('fails for the last row deleted, even with the stage row made to match: the stored head disagrees', async () => {
    const { workflowId, proofId } = await open();
    const kept = (await entries(workflowId).where('seq', 1).first()) as {
      actor_commitment: string;
      at: string;
    };
    await entries(workflowId).where('seq', 2).delete();
    await app.deps
      .db('workflow_stages')
      .where({ workflow_id: workflowId, stage: 'application' })
      .update({ actor_commitment: kept.actor_commitment, timestamp: kept.at });
    // The two rows left recompute on their own; only the head on the workflow row tells.
    const records = await loadRecords(app.deps.db, workflowId);
    const vendor = findTemplate('Vendor Onboarding') as WorkflowTemplate;
    expect(verifyRecords({ template: vendor, proofId, records }).notAltered).toBe(true);
    expectRefused(await verify(proofId), 'head_mismatch');
  });

  it('fails when the stored head, length or status disagrees with the rows', async () => {
    for (const change of [
      { chain_head: 'ab'.repeat(32) },
      { entry_count: 4 },
      { status: 'completed' },
    ] as const) {
      const { workflowId, proofId } = await open();
      await app.deps.db('workflows').where('id', workflowId).update(change);
      expectRefused(await verify(proofId), 'head_mismatch');
    }
  });

  it('fails when rows and stored head agree but the signed package’s head does not', async () => {
    const vendor = findTemplate('Vendor Onboarding') as WorkflowTemplate;
    const { workflowId, proofId } = await prepare(app.request, vendor.name);
    await drive(app.request, workflowId, vendor.name);
    expect(await waitForPackage(app.request, proofId)).toMatchObject({
      notAltered: true,
      inclusionValid: true,
    });
    // Roll the record back by its last entry (the service's finalize), consistently everywhere the
    // database keeps it: the entries, the stage row and the workflow row's head.
    const last = (await entries(workflowId).orderBy('seq', 'desc').first()) as {
      seq: number;
      prev_hash: string;
    };
    await entries(workflowId).where('seq', last.seq).delete();
    await app.deps
      .db('workflow_stages')
      .where({ workflow_id: workflowId, stage: 'proof' })
      .update({ status: 'pending', actor_commitment: null, timestamp: null, proof_hash: null });
    await app.deps
      .db('workflows')
      .where('id', workflowId)
      .update({ chain_head: last.prev_hash, entry_count: last.seq, status: 'active' });
    const v = await verify(proofId);
    expectRefused(v, 'package_mismatch');
    expect(v.reasons.map((r: { code: string }) => r.code)).not.toContain('head_mismatch');
    // The package itself is still the service's, validly signed and logged.
    expect(v).toMatchObject({ signatureValid: true, inclusionValid: true });
  });
});
