// Blind policy proofs as a stage's evidence. A stage that needs one names its policy; the workflow fixes
// the policy's parameters (as commitments) at prepare; an offered proof passes only when it is of that
// policy, commits to those parameters, carries this stage's context, verifies, and was never used.
import type { Knex } from 'knex';
import { canonicalJson } from '../platform/canonical';
import { sha256Hex } from '../platform/crypto';
import type { Db } from '../platform/db/knex';
import { AppError, conflict, notFound, unprocessable, validationFailed } from '../platform/errors';
import type { FieldError } from '../platform/errors';
import { circuitManifest } from '../zk/artifacts';
import { fieldElementSchema, stageContext } from '../zk/context';
import { getPolicy } from '../zk/policies';
import type { PolicyId } from '../zk/policies';
import { insecureSetup } from '../zk/setup';
import { groth16ProofSchema, publicSignalsSchema, verifyPolicyProof } from '../zk/verify';
import type { PolicyProofEvidence } from './records';
import { findTemplate, policyStages } from './templates';
import type { CredentialRequirement, WorkflowTemplate } from './templates';
import { z } from 'zod';
import { FIELD_PRIME } from '../platform/field';
import { commitQuery, termParametersSchema } from '../credentials/query';
import type { PlainParameters } from '../credentials/query';

type Conn = Db | Knex.Transaction;

/** The refusals of the gate, each a 409 whose code names the rule (bad input is 400 invalid_proof_format). */
export const policyGateCodes = [
  'policy_proof_not_expected',
  'policy_parameters_unset',
  'policy_proof_wrong_policy',
  'policy_proof_invalid',
  'policy_parameters_mismatch',
  'policy_proof_wrong_context',
  'policy_proof_reused',
] as const;
export type PolicyGateCode = (typeof policyGateCodes)[number];

/** What a stage fixes: its position, its policy, and the commitments to the policy's parameters. */
export interface StageGate {
  index: number;
  stage: string;
  policy: PolicyId;
  commitments: Record<string, string>;
  /** A credential stage's parameters in plain, by field, when the owner published them (salt 0). */
  plain?: Record<string, PlainParameters>;
}

/** A gate as prepare answers it: with the context a proof for the stage must carry, and the salts once. */
export interface PreparedGate extends StageGate {
  context: string;
  /** Only when the service committed plain parameters: the salts to open them. Returned once, never stored. */
  salts?: Record<string, string>;
}

const refuse = (code: PolicyGateCode, detail: string, extra?: Record<string, unknown>): AppError =>
  conflict(code, detail, extra);

const prefixed = (prefix: string, issues: { path: PropertyKey[]; message: string }[]): FieldError[] =>
  issues.map((i) => ({ path: [prefix, ...i.path.map(String)].join('.'), message: i.message }));

/**
 * Validates and commits the parameters of every stage of `template` that needs a policy proof. Each
 * stage takes either the commitments (`{ thresholdCommitment }`) or the plain parameters, optionally
 * with salts (`{ threshold, thresholdSalt? }`), which are committed here and never kept. Throws 400
 * (naming fields, never values) or 422 `policy_parameters_required` before anything is written.
 */
export async function commitPolicyParameters(
  template: WorkflowTemplate,
  raw: Record<string, unknown> | undefined,
): Promise<Array<Omit<PreparedGate, 'context'>>> {
  const stages = policyStages(template);
  const given = raw ?? {};
  const unexpected = Object.keys(given).filter((key) => !stages.some((s) => s.stage.key === key));
  if (unexpected.length > 0) {
    throw validationFailed(
      unexpected.map((key) => ({
        path: `policyParameters.${key}`,
        message: `${template.name} has no stage '${key}' that takes policy parameters`,
      })),
    );
  }
  const missing = stages.filter((s) => given[s.stage.key] === undefined);
  if (missing.length > 0) {
    throw unprocessable(
      'policy_parameters_required',
      `${template.name} needs the parameters of its policy stages at prepare: ${missing
        .map((s) => `${s.stage.key} (${s.policy})`)
        .join(', ')}. Give the commitments, or the plain parameters for the service to commit.`,
      {
        stages: missing.map((s) => ({
          stage: s.stage.key,
          policy: s.policy,
          commitments: [...getPolicy(s.policy).parameters.commitmentSignals],
        })),
      },
    );
  }
  const gates: Array<Omit<PreparedGate, 'context'>> = [];
  const errors: FieldError[] = [];
  for (const { index, stage, policy } of stages) {
    const value = given[stage.key];
    const path = `policyParameters.${stage.key}`;
    if (stage.credential && value && typeof value === 'object' && 'credential' in value) {
      try {
        gates.push({
          index,
          stage: stage.key,
          ...(await commitCredentialQuery(stage.credential, value, path)),
        });
      } catch (err) {
        if (!(err instanceof AppError) || !Array.isArray(err.extra?.errors)) throw err;
        errors.push(...(err.extra.errors as FieldError[]));
      }
      continue;
    }
    const params = getPolicy(policy).parameters;
    const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
    const asCommitments = keys.length > 0 && keys.every((k) => params.commitmentSignals.includes(k));
    if (asCommitments) {
      const errs: FieldError[] = [];
      const commitments: Record<string, string> = {};
      for (const name of params.commitmentSignals) {
        const parsed = fieldElementSchema.safeParse((value as Record<string, unknown>)[name]);
        if (parsed.success) commitments[name] = parsed.data;
        else errs.push({ path: `${path}.${name}`, message: parsed.error.issues[0]?.message ?? 'invalid' });
      }
      if (errs.length) errors.push(...errs);
      else gates.push({ index, stage: stage.key, policy, commitments });
      continue;
    }
    const parsed = params.plainSchema.safeParse(value);
    if (!parsed.success) {
      errors.push(...prefixed(path, parsed.error.issues));
      continue;
    }
    const committed = await params.commit(parsed.data);
    gates.push({ index, stage: stage.key, policy, ...committed });
  }
  if (errors.length > 0) throw validationFailed(errors, 'The policy parameters are not valid.');
  return gates;
}

const credentialChoiceSchema = z.strictObject({
  credential: z.strictObject({
    subject: z
      .string()
      .regex(/^(0|[1-9]\d{0,77})$/, 'a decimal field element')
      .refine((v) => BigInt(v) < FIELD_PRIME, 'below the BN254 field prime')
      .describe('The applicant’s subject commitment: what the issuer’s credential names'),
    parameters: z.record(z.string(), termParametersSchema),
    /** Publish the parameters in plain (where the template allows it): on the page, in the package. */
    plain: z.boolean().optional(),
  }),
});

/**
 * A stage prepared for a credential query: the schema, the template's fields and operators, the
 * owner's parameters (committed; salts back once) and the applicant's subject commitment.
 */
async function commitCredentialQuery(
  requirement: CredentialRequirement,
  raw: unknown,
  path: string,
): Promise<{
  policy: 'credential';
  commitments: Record<string, string>;
  salts: Record<string, string>;
  plain?: Record<string, PlainParameters>;
}> {
  const parsed = credentialChoiceSchema.safeParse(raw);
  if (!parsed.success) throw validationFailed(prefixed(path, parsed.error.issues));
  const { subject, parameters } = parsed.data.credential;
  const allowed = requirement.parameters ?? 'committed';
  const plain = allowed === 'plain' || (allowed === 'either' && parsed.data.credential.plain === true);
  if (parsed.data.credential.plain === true && allowed === 'committed')
    throw validationFailed([
      { path: `${path}.credential.plain`, message: 'this stage keeps its parameters committed' },
    ]);
  if (parsed.data.credential.plain === false && allowed === 'plain')
    throw validationFailed([
      { path: `${path}.credential.plain`, message: 'this stage publishes its parameters in plain' },
    ]);
  const salted = plain ? Object.keys(parameters).filter((f) => parameters[f]!.salt !== undefined) : [];
  if (salted.length)
    throw validationFailed(
      salted.map((f) => ({
        path: `${path}.credential.parameters.${f}.salt`,
        message: 'a parameter published in plain takes no salt (it is committed with 0)',
      })),
    );
  const unexpected = Object.keys(parameters).filter((f) => !requirement.query.some((t) => t.field === f));
  const missing = requirement.query.filter((t) => parameters[t.field] === undefined);
  if (unexpected.length || missing.length)
    throw validationFailed([
      ...unexpected.map((f) => ({
        path: `${path}.credential.parameters.${f}`,
        message: 'not a field of the query',
      })),
      ...missing.map((t) => ({
        path: `${path}.credential.parameters.${t.field}`,
        message: `the parameter of ${t.field} ${t.op}`,
      })),
    ]);
  const { signals, salts } = await commitQuery(
    requirement.schema,
    requirement.query,
    requirement.query.map((t) => (plain ? { ...parameters[t.field]!, salt: '0' } : parameters[t.field]!)),
    `${path}.credential.parameters`,
  );
  return {
    policy: 'credential',
    commitments: { ...signals, subject },
    salts: Object.fromEntries(requirement.query.map((t, i) => [`${t.field}Salt`, salts[i]!])),
    ...(plain
      ? { plain: Object.fromEntries(requirement.query.map((t) => [t.field, parameters[t.field]!])) }
      : {}),
  };
}

/** The gates a workflow fixed, by stage index. */
export async function loadStageGates(db: Conn, workflowId: string): Promise<Map<number, StageGate>> {
  const rows = (await db('workflow_stages')
    .where('workflow_id', workflowId)
    .whereNotNull('policy')
    .select('idx', 'stage', 'policy', 'policy_commitments', 'policy_plain')) as Array<{
    idx: number;
    stage: string;
    policy: PolicyId;
    policy_commitments: Record<string, string>;
    policy_plain: Record<string, PlainParameters> | null;
  }>;
  return new Map(
    rows.map((r) => [
      r.idx,
      {
        index: r.idx,
        stage: r.stage,
        policy: r.policy,
        commitments: r.policy_commitments,
        ...(r.policy_plain ? { plain: r.policy_plain } : {}),
      },
    ]),
  );
}

/** The hash a policy proof is committed under as evidence: over the proof and its public signals. */
export function policyProofHash(input: { policyId: string; proof: unknown; publicSignals: unknown }): string {
  return sha256Hex(
    canonicalJson({
      type: 'proof-exchange/policy-proof/v1',
      policyId: input.policyId,
      proof: input.proof,
      publicSignals: input.publicSignals,
    }),
  );
}

/**
 * What single use is keyed on: the statement (policy and public signals), not the proof bytes,
 * which anyone holding a Groth16 proof can re-randomize into another valid proof of the same statement.
 */
export function policyStatementHash(policyId: string, publicSignals: readonly string[]): string {
  return sha256Hex(
    canonicalJson({
      type: 'proof-exchange/policy-statement/v1',
      policyId,
      publicSignals: [...publicSignals],
    }),
  );
}

export interface AcceptedPolicyProof {
  policy: PolicyId;
  context: string;
  evidenceHash: string;
  statementHash: string;
  insecureSetup: boolean;
  /** A credential proof's own part: the proof and the facts it was accepted on, for the package. */
  credential?: { proof: unknown; publicSignals: string[]; accepted: AcceptedCredential };
}

/**
 * Checks an offered proof against a stage's gate, cheapest rule first; the pairing check runs only
 * for a proof that would otherwise pass. Single use is the caller's, inside its transaction
 * (`claimPolicyProof`). Throws 400 `invalid_proof_format` or a 409 naming the rule.
 */
export async function checkPolicyProof(
  gate: StageGate | undefined,
  where: { proofId: string; stage: string; stageRequiresProof: boolean },
  offered: PolicyProofEvidence,
): Promise<AcceptedPolicyProof> {
  if (!gate) {
    if (where.stageRequiresProof) {
      throw refuse(
        'policy_parameters_unset',
        `Stage '${where.stage}' needs a policy proof, but this workflow fixed no parameters for it; prepare a new workflow.`,
      );
    }
    throw refuse('policy_proof_not_expected', `Stage '${where.stage}' takes no blind policy proof.`);
  }
  if (offered.policy !== gate.policy) {
    throw refuse(
      'policy_proof_wrong_policy',
      `Stage '${gate.stage}' needs a ${gate.policy} proof, not ${offered.policy}.`,
      { policy: gate.policy },
    );
  }
  const proof = groth16ProofSchema.safeParse(offered.proof);
  const signals = publicSignalsSchema.safeParse(offered.publicSignals);
  if (!proof.success || !signals.success) {
    throw new AppError(
      400,
      'invalid_proof_format',
      'The policy proof or its public signals are not well formed.',
      {
        errors: [
          ...(proof.success ? [] : prefixed('policyProof.proof', proof.error.issues)),
          ...(signals.success ? [] : prefixed('policyProof.publicSignals', signals.error.issues)),
        ],
      },
    );
  }
  const names = circuitManifest(getPolicy(gate.policy).circuit).publicSignals;
  if (signals.data.length !== names.length) {
    throw refuse('policy_proof_invalid', `A ${gate.policy} proof has ${names.length} public signals.`, {
      reason: 'signal_count_mismatch',
    });
  }
  const signal = (name: string) => signals.data[names.indexOf(name)];
  const differing = Object.keys(gate.commitments).filter((name) => signal(name) !== gate.commitments[name]);
  if (differing.length > 0) {
    throw refuse(
      'policy_parameters_mismatch',
      `The proof's ${differing.join(', ')} ${differing.length > 1 ? 'differ' : 'differs'} from the parameters this workflow fixed for '${gate.stage}': it proves another policy than the stage's.`,
    );
  }
  const context = await stageContext(where.proofId, gate.index);
  if (signal('context') !== context) {
    throw refuse(
      'policy_proof_wrong_context',
      `The proof was not made for stage '${gate.stage}' of this workflow (its context differs).`,
      { context },
    );
  }
  const verdict = await verifyPolicyProof(gate.policy, proof.data, signals.data);
  if (!verdict.valid) {
    throw refuse('policy_proof_invalid', `The ${gate.policy} proof does not verify.`, {
      reason: verdict.reason,
    });
  }
  return {
    policy: gate.policy,
    context,
    evidenceHash: policyProofHash({
      policyId: gate.policy,
      proof: offered.proof,
      publicSignals: signals.data,
    }),
    statementHash: policyStatementHash(gate.policy, signals.data),
    insecureSetup: insecureSetup(),
  };
}

/** Takes the proof's single use inside the event's transaction; a statement used before is refused. */
export async function claimPolicyProof(
  trx: Knex.Transaction,
  accepted: AcceptedPolicyProof,
  workflowId: string,
  stageIndex: number,
): Promise<void> {
  const inserted = await trx('policy_proof_uses')
    .insert({ statement_hash: accepted.statementHash, workflow_id: workflowId, stage_idx: stageIndex })
    .onConflict('statement_hash')
    .ignore()
    .returning('statement_hash');
  if (inserted.length === 0) {
    throw refuse('policy_proof_reused', 'This policy proof was already used as evidence; make a new one.');
  }
  if (accepted.credential)
    await trx('workflow_credential_proofs').insert({
      workflow_id: workflowId,
      stage_idx: stageIndex,
      evidence_hash: accepted.evidenceHash,
      proof: JSON.stringify(accepted.credential.proof),
      public_signals: JSON.stringify(accepted.credential.publicSignals),
      facts: JSON.stringify(accepted.credential.accepted),
    });
}

/** The facts a credential proof was accepted on (credential-proofs.ts): its requirement, issuer, root. */
export interface AcceptedCredential {
  requirement: unknown;
  issuer: { statement: unknown; leafIndex: number };
  revocation: { statement: unknown; leafIndex: number; loggedAt: string };
}

export interface StageBinding {
  proofId: string;
  stage: string;
  stageIndex: number;
  policy: PolicyId;
  context: string;
  commitments: Record<string, string>;
}

/**
 * For the prove route: what a proof for `stage` of the workflow with public id `proofId` must carry.
 * Public facts only (the commitments are salted); unknown workflows are 404, stages without a policy 422.
 */
export async function stageBinding(db: Conn, proofId: string, stage: string): Promise<StageBinding> {
  const wf = (await db('workflows').where('proof_id', proofId).first('id', 'template')) as
    { id: string; template: string } | undefined;
  if (!wf) throw notFound(`Workflow ${proofId}`);
  const template = findTemplate(wf.template);
  const index = template?.stages.findIndex((s) => s.key === stage) ?? -1;
  const gate = (await loadStageGates(db, wf.id)).get(index);
  if (!template || index < 0 || !gate) {
    throw unprocessable(
      'policy_proof_not_expected',
      `Stage '${stage}' of this workflow takes no blind policy proof.`,
    );
  }
  return {
    proofId,
    stage,
    stageIndex: index,
    policy: gate.policy,
    context: await stageContext(proofId, index),
    commitments: gate.commitments,
  };
}
