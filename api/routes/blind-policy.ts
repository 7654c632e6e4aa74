// Table C, blind policy proofs (Groth16): prove through the queue, verify in-process, status of the
// policies, the prover and one proof; plus the readiness check on the circuit artifacts.
import { stat } from 'node:fs/promises';
import { z } from 'zod';
import { env } from '../../shared/env';
import { idPattern } from '../../shared/ids';
import { acceptPolicyProof } from '../../shared/workflows/policyEvidence';
import { artifactPaths, describePolicies, loadManifest } from '../../shared/zk/index';
import {
  HOLD_TTL_MS,
  createPolicyProof,
  expireHeldProofs,
  getProof,
  proofStatuses,
  proofView,
  provingStats,
} from '../../shared/zk/store';
import type { Request } from 'express';
import type { AppDeps } from '../deps';
import type { RouteTable } from '../http/route';
import { origin } from '../http/links';
import { registerReadinessCheck } from './commercial';

const tags = ['Blind policy proofs'];
const base = '/api/proof-workflows/blind-policy';
const proofIdSchema = z.string().regex(idPattern('prf'), 'a proof id (prf_…)');
const decimalString = z.string();

const timingsSchema = z.object({
  witnessMs: z.number().nullable(),
  provingMs: z.number().nullable(),
  totalMs: z.number().nullable(),
  queueMs: z.number().nullable(),
});

const proofSchema = z
  .object({
    id: z.string(),
    policy: z.string(),
    status: z.enum(proofStatuses),
    progress: z.number().int(),
    stage: z.string().nullable(),
    commitments: z.record(z.string(), decimalString),
    publicSignals: z.array(decimalString).nullable(),
    proof: z.record(z.string(), z.unknown()).nullable(),
    backend: z.string().nullable(),
    timings: timingsSchema,
    attempts: z.number().int(),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    createdAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    holdExpiresAt: z.string().nullable(),
    links: z.record(z.string(), z.string()),
  })
  .meta({
    id: 'BlindPolicyProof',
    description: 'A proof row: public values only, never the private inputs.',
  });

const proveBody = z
  .strictObject({
    policy: z.string().min(1).max(64).describe('threshold, range or membership (see the status route)'),
    inputs: z
      .record(z.string(), z.unknown())
      .describe(
        'The private inputs of the policy, e.g. threshold: { value, threshold, valueSalt?, thresholdSalt? }. Used for the witness only; never stored in clear or logged.',
      ),
    hold: z
      .boolean()
      .optional()
      .describe(
        `Hold the proof (sealed input kept at most ${HOLD_TTL_MS / 3600_000} h) until a paid zk.blind_policy exchange job releases it, instead of proving now`,
      ),
  })
  .meta({ id: 'BlindPolicyProveRequest' });

const verifyBody = z
  .strictObject({
    policy: z.string().min(1).max(64),
    proof: z.unknown().describe('The Groth16 proof as returned by prove (pi_a, pi_b, pi_c)'),
    publicSignals: z.unknown().describe('The public signals, decimal strings in circuit order'),
  })
  .meta({ id: 'BlindPolicyVerifyRequest' });

const statSchema = z.object({ p50: z.number().nullable(), p95: z.number().nullable() });

const statusSchema = z.object({
  policies: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      description: z.string(),
      circuit: z.string(),
      label: z.string(),
      policyFieldId: z.string(),
      constraints: z.number().int(),
      publicSignals: z.array(z.string()),
      insecureSetup: z.boolean(),
    }),
  ),
  prover: z.object({
    configuredBackend: z.string(),
    lastBackend: z.string().nullable(),
    queue: z
      .object({ waiting: z.number().int(), active: z.number().int(), delayed: z.number().int() })
      .nullable(),
  }),
  provingTimes: z.array(
    z.object({
      policy: z.string(),
      count: z.number().int(),
      totalMs: statSchema,
      witnessMs: statSchema,
      provingMs: statSchema,
      queueMs: statSchema,
    }),
  ),
});

/** The prove response's salts are the only copy: they are not stored anywhere. */
const proveReply = z.object({
  proof: proofSchema,
  salts: z.record(z.string(), decimalString),
  commitments: z.record(z.string(), decimalString),
});

registerReadinessCheck('circuitArtifacts', async () => {
  try {
    const manifest = loadManifest();
    const circuits = Object.keys(manifest.circuits);
    if (circuits.length === 0) return { ok: false, detail: 'the manifest lists no circuits' };
    for (const circuit of circuits) {
      const entry = manifest.circuits[circuit]!;
      const paths = artifactPaths(circuit);
      for (const [kind, path, bytes] of [
        ['wasm', paths.wasm, entry.wasm.bytes],
        ['zkey', paths.zkey, entry.zkey.bytes],
        ['vkey', paths.vkey, entry.vkey.bytes],
      ] as const) {
        const size = await stat(path).then(
          (s) => s.size,
          () => -1,
        );
        if (size < 0) return { ok: false, detail: `${circuit}.${kind} is missing` };
        if (size !== bytes) return { ok: false, detail: `${circuit}.${kind} does not match the manifest` };
      }
    }
    return {
      ok: true,
      detail: `${circuits.join(', ')}${manifest.ptau.insecure ? ' (insecure development setup)' : ''}`,
    };
  } catch (err) {
    return { ok: false, detail: (err as Error).message };
  }
});

export function blindPolicyRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: `${base}/prove`,
      operationId: 'proveBlindPolicy',
      summary: 'Queue a Groth16 proof that private inputs satisfy a policy',
      description:
        'Checks the inputs first (400 validation_failed / unknown_policy, 422 policy_not_satisfied, nothing stored), then queues the proof for the prover. The answer carries the salts of the commitments: they are returned once and kept nowhere, so keep them to open a commitment later. Open to anyone; an agent key, when sent, is recorded on the proof.',
      tags,
      auth: 'agent-optional',
      body: proveBody,
      responses: {
        202: { description: 'Queued (or held); poll the status link', schema: proveReply },
      },
      handler: async ({ body, auth, req, deps }) => {
        if (body.hold) await expireHeldProofs(deps.db);
        const { row, salts } = await createPolicyProof(deps.db, deps.queues, {
          policy: body.policy,
          inputs: body.inputs,
          hold: body.hold === true,
          agentId: auth.kind === 'agent' ? auth.agentId : null,
        });
        const proof = { ...proofView(row), links: proofLinks(req, deps, row.id, row.status) };
        return {
          status: 202,
          headers: { Location: proof.links.self!, 'Cache-Control': 'no-store' },
          body: { proof, salts, commitments: row.commitments },
        };
      },
    })
    .add({
      method: 'post',
      path: `${base}/verify`,
      operationId: 'verifyBlindPolicy',
      summary: 'Verify a blind policy proof against the policy’s verification key',
      description:
        'In-process Groth16 verification. A well-formed proof that does not hold gives valid: false with a reason; a structurally wrong proof or signal list is 400 invalid_proof_format. A valid proof’s evidenceHash can be named as a workflow stage’s evidence.',
      tags,
      body: verifyBody,
      responses: {
        200: {
          description: 'The verdict',
          schema: z.object({
            valid: z.boolean(),
            reason: z.string().optional(),
            policy: z.string(),
            evidenceHash: z.string().optional(),
          }),
        },
      },
      handler: async ({ body, deps }) => {
        const result = await acceptPolicyProof(deps.db, {
          policyId: body.policy,
          proof: body.proof,
          publicSignals: body.publicSignals,
        });
        return {
          status: 200,
          body: result.valid
            ? { valid: true, policy: body.policy, evidenceHash: result.evidenceHash }
            : { valid: false, reason: result.reason, policy: body.policy },
        };
      },
    })
    .add({
      method: 'get',
      path: `${base}/status`,
      operationId: 'blindPolicyStatus',
      summary: 'The policies, the prover and recent proving times; or one proof by `proofId`',
      tags,
      query: z.strictObject({ proofId: proofIdSchema.optional() }),
      responses: {
        200: {
          description: 'Policies and prover status, or (with proofId) the proof',
          schema: z.union([statusSchema, z.object({ proof: proofSchema })]),
        },
      },
      handler: async ({ query, req, deps }) => {
        if (query.proofId) {
          const row = await getProof(deps.db, query.proofId);
          const proof = { ...proofView(row), links: proofLinks(req, deps, row.id, row.status) };
          return { status: 200, headers: { 'Cache-Control': 'no-store' }, body: { proof } };
        }
        const [provingTimes, queue, last] = await Promise.all([
          provingStats(deps.db),
          deps.queues
            .get('proofs')
            .getJobCounts('waiting', 'active', 'delayed', 'prioritized')
            .then(
              (c) => ({
                waiting: (c.waiting ?? 0) + (c.prioritized ?? 0),
                active: c.active ?? 0,
                delayed: c.delayed ?? 0,
              }),
              () => null,
            ),
          deps.db('proofs').where('status', 'succeeded').orderBy('finished_at', 'desc').first('backend'),
        ]);
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: {
            policies: describePolicies(),
            prover: {
              configuredBackend: env.PROVER_BACKEND,
              lastBackend: (last as { backend: string | null } | undefined)?.backend ?? null,
              queue,
            },
            provingTimes,
          },
        };
      },
    });
}

/** A held proof's `purchase` link is the exchange's job endpoint: POST { service: 'zk.blind_policy', input: { proofId } }. */
function proofLinks(req: Request, deps: AppDeps, id: string, status: string): Record<string, string> {
  const site = origin(req, deps, 'site');
  const links: Record<string, string> = {
    self: `${site}${base}/status?proofId=${id}`,
    verify: `${site}${base}/verify`,
  };
  if (status === 'held') links.purchase = `${origin(req, deps, 'base')}/api/jobs`;
  return links;
}
