// Drives proof workflows over HTTP the way a client would (hashing everything private itself), with a
// real prover consuming the `proofs` queue in this process.
import type { Worker } from 'bullmq';
import { expect } from 'vitest';
import { sha256Hex } from '../../../shared/platform/crypto';
import { createDb } from '../../../shared/platform/db/knex';
import type { Db } from '../../../shared/platform/db/knex';
import { Queues } from '../../../shared/platform/queues';
import { createRedis } from '../../../shared/platform/redis';
import { findTemplate } from '../../../shared/workflows/templates';
import { provePolicy, snarkjsBackend } from '../../../shared/zk';
import type { WorkflowTemplate } from '../../../shared/workflows/templates';
import { startWorker } from '../../../workers/pool';
import { proofsProcessor } from '../../../workers/prover/main';
import type { TestApp } from '../../helpers';
import { eventually } from '../../helpers';

export const OPERATOR = 'Bearer op_test_token_0123456789';

/** A client's commitment to an actor: a salted hash it keeps; the service never sees the name. */
export const actor = (name: string): string => sha256Hex(`client-salt-7f3a:${name}`);
/** A client's hash of a private document or note. */
export const evidence = (text: string): string => sha256Hex(text);

export interface TestProver {
  db: Db;
  worker: Worker;
  close(): Promise<void>;
}

/** The real prover process's processor, consuming this file's `proofs` queue. */
export function testProver(): TestProver {
  const db = createDb();
  const queueRedis = createRedis('api');
  const queues = new Queues(queueRedis);
  const redis = createRedis('worker');
  const worker = startWorker('proofs', proofsProcessor(db, queues), redis, { concurrency: 4 });
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

type Request = TestApp['request'];

/** The lender's private policy for Underwriting's risk stage: a threshold and the salt of its commitment. */
export const RISK_POLICY = { threshold: '650', thresholdSalt: '918273645546372819' };

/** Parameters for the templates whose stages need a policy proof (the owner's plain threshold). */
const defaultParameters: Record<string, Record<string, unknown>> = {
  Underwriting: { risk_assessment: RISK_POLICY },
};

export interface PolicyGate {
  index: number;
  stage: string;
  policy: string;
  commitments: Record<string, string>;
  context: string;
  salts?: Record<string, string>;
}

export async function prepare(
  request: Request,
  template: string,
  policyParameters: Record<string, unknown> | undefined = defaultParameters[template],
): Promise<{ workflowId: string; proofId: string; policyGates: PolicyGate[] }> {
  const res = await request
    .post('/api/proof-workflows/prepare')
    .set('Authorization', OPERATOR)
    .send({ template, ...(policyParameters ? { policyParameters } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return {
    workflowId: res.body.workflowId as string,
    proofId: res.body.proofId as string,
    policyGates: res.body.policyGates as PolicyGate[],
  };
}

export interface OfferedPolicyProof {
  policy: string;
  proof: unknown;
  publicSignals: string[];
}

/**
 * A real Groth16 threshold proof (a credit score of 742) against the risk policy, bound to a stage
 * by its context: what an applicant holding the lender's threshold and salt makes for the stage.
 */
export async function riskProof(
  context: string,
  inputs: Record<string, string> = { value: '742', ...RISK_POLICY },
): Promise<OfferedPolicyProof> {
  const p = await provePolicy(snarkjsBackend(), 'threshold', inputs, undefined, { context: BigInt(context) });
  return { policy: 'threshold', proof: p.proof, publicSignals: p.publicSignals };
}

export function event(
  request: Request,
  body: {
    workflowId: string;
    stage: string;
    action: string;
    actorCommitment: string;
    evidenceHash?: string;
    policyProof?: OfferedPolicyProof;
  },
) {
  return request.post('/api/proof-workflows/event').set('Authorization', OPERATOR).send(body);
}

export interface DriveOptions {
  /** Private texts the client hashes as evidence, in order of use. */
  secrets?: string[];
  /** The blind policy proof for the stage that needs one (made for this workflow's stage). */
  policyProof?: OfferedPolicyProof;
  /** Stop before this stage (exclusive). */
  until?: string;
}

/** Runs every client stage of a template with the fewest events its rules allow; the service closes Proof. */
export async function drive(
  request: Request,
  workflowId: string,
  templateName: string,
  options: DriveOptions = {},
): Promise<Body[]> {
  const template = findTemplate(templateName) as WorkflowTemplate;
  const replies: Body[] = [];
  let n = 0;
  const send = async (
    stage: string,
    action: string,
    who: string,
    evidence?: { evidenceHash: string } | { policyProof: OfferedPolicyProof },
  ) => {
    const res = await event(request, {
      workflowId,
      stage,
      action,
      actorCommitment: actor(who),
      ...evidence,
    });
    expect(res.status, `${stage} ${action}: ${JSON.stringify(res.body)}`).toBe(200);
    replies.push(res.body as Body);
  };
  for (const spec of template.stages) {
    if (spec.key === options.until) break;
    if (spec.phase === 'proof') continue;
    if (spec.evidenceRequired) {
      const offered = spec.requiresBlindPolicyProof
        ? { policyProof: options.policyProof! }
        : { evidenceHash: evidence(options.secrets?.[n++] ?? `${templateName} ${spec.key} document`) };
      await send(spec.key, 'attach_evidence', 'applicant', offered);
    }
    if (spec.actions.includes('submit')) await send(spec.key, 'submit', 'applicant');
    else
      for (let i = 0; i < spec.requiredApprovals; i++)
        await send(spec.key, 'approve', `${spec.key}-reviewer-${i}`);
  }
  return replies;
}

/** A JSON reply body, read as loosely as a client reads it (supertest types it so). */
export type Body = Awaited<ReturnType<Request['get']>>['body'];

/** Polls the verify route until the workflow's package is logged; returns the verdict. */
export async function waitForPackage(request: Request, proofId: string): Promise<Body> {
  return eventually(async () => {
    const res = await request.post('/api/proof-workflows/verify').send({ proofId });
    expect(res.status).toBe(200);
    return res.body.packageStatus === 'logged' ? (res.body as Body) : undefined;
  }, 15_000);
}
