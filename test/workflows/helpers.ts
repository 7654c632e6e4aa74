// Drives workflows through the engine for the tests: deterministic actors, times, salts and keys.
import { createPrivateKey, createPublicKey, sign } from 'node:crypto';
import { keyIdOf, sha256Hex } from '../../shared/platform/crypto';
import { applyEvent, initialStages } from '../../shared/workflows/engine';
import type { EventOptions, WorkflowContext } from '../../shared/workflows/engine';
import type { StageRecord, WorkflowEvent } from '../../shared/workflows/records';
import type { WorkflowTemplate } from '../../shared/workflows/templates';

// Keys made from fixed seeds with node:crypto alone: the modules under test load no configuration.
function testKey(seedByte: number) {
  const pkcs8 = Buffer.concat([
    Buffer.from('302e020100300506032b657004220420', 'hex'),
    Buffer.alloc(32, seedByte),
  ]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey)
    .export({ format: 'der', type: 'spki' })
    .subarray(12)
    .toString('base64url');
  return {
    keyId: keyIdOf(publicKey),
    publicKey,
    sign: (message: string | Uint8Array) =>
      sign(null, Buffer.from(message), privateKey).toString('base64url'),
  };
}

export const serviceKey = testKey(7);
export const otherKey = testKey(9);
export const logKey = testKey(11);

export const actor = (name: string): string => sha256Hex(`actor:${name}`);
export const evidence = (text: string): string => sha256Hex(text);

/** A small driver over the pure engine that keeps the records the way the database would. */
export class Run {
  stages: StageRecord[];
  private clock = Date.parse('2025-03-01T09:00:00.000Z');
  private salts = 0;

  constructor(readonly ctx: WorkflowContext) {
    this.stages = initialStages(ctx.template);
  }

  event(
    stage: string,
    action: WorkflowEvent['action'],
    who: string,
    extra: { evidenceHash?: string; evidenceKind?: EventOptions['evidenceKind'] } = {},
  ) {
    this.clock += 60_000;
    const options: EventOptions = { now: new Date(this.clock) };
    if (extra.evidenceHash) options.evidenceSalt = `salt-${this.salts++}`;
    if (extra.evidenceKind) options.evidenceKind = extra.evidenceKind;
    const t = applyEvent(
      this.ctx,
      this.stages,
      {
        stage,
        action,
        actorCommitment: actor(who),
        ...(extra.evidenceHash ? { evidenceHash: extra.evidenceHash } : {}),
      },
      options,
    );
    this.stages = t.stages;
    return t;
  }
}

/** Runs every stage of a template to completion with the fewest events its rules allow. */
export function completeWorkflow(
  template: WorkflowTemplate,
  proofId = 'prf_test',
  secrets: string[] = [],
): Run {
  const run = new Run({ template, proofId });
  let secret = 0;
  const nextEvidence = () =>
    evidence(secrets[secret++ % Math.max(secrets.length, 1)] ?? `document ${secret++}`);
  for (const spec of template.stages) {
    if (spec.evidenceRequired) {
      run.event(spec.key, 'attach_evidence', 'applicant', {
        evidenceHash: nextEvidence(),
        ...(spec.requiresBlindPolicyProof ? { evidenceKind: 'blind_policy_proof' as const } : {}),
      });
    }
    if (spec.actions.includes('submit')) run.event(spec.key, 'submit', 'applicant');
    else if (spec.actions.includes('finalize')) run.event(spec.key, 'finalize', 'service');
    else
      for (let i = 0; i < spec.requiredApprovals; i++)
        run.event(spec.key, 'approve', `${spec.key}-reviewer-${i}`);
  }
  return run;
}
