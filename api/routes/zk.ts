// The site table, blind policy proofs (Groth16): prove through the queue, verify in-process, status of the
// policies, the prover and one proof.
import { z } from 'zod';
import { env } from '../../shared/platform/env';
import { AppError, notFound } from '../../shared/platform/errors';
import { idPattern } from '../../shared/platform/ids';
import { stageBinding } from '../../shared/workflows/policy-gate';
import { fieldElementSchema } from '../../shared/zk/context';
import { verifyBlindPolicy } from '../../shared/zk/verify';
import { proveBlindPolicy } from '../../shared/zk/prove';
import { blindPolicyStatus } from '../../shared/zk/status';
import { transcriptSchema } from '../../shared/zk/ceremony';
import { loggedTranscript } from '../../shared/zk/ceremony-log';
import { HOLD_TTL_MS, proofStatuses } from '../../shared/zk/rows';
import type { ProofRow } from '../../shared/zk/rows';
import { getProof, proofsInFlight } from '../../shared/zk/proofs';
import { waitForHinted } from '../../shared/jobs/follow';
import { proofView } from '../../shared/zk/views';
import type { Request } from 'express';
import type { AppDeps } from '../deps';
import { waitSeconds } from '../http/route';
import type { RouteTable } from '../http/route';
import { origin } from '../http/links';
import { closedSignal } from '../http/closed';
import { budgetKey, inFlightSlot } from '../http/ratelimit';
import { circuitSetupSchema } from '../views/circuit-setup';

const tags = ['Blind policy proofs'];
const base = '/api/proof-workflows/blind-policy';

const proofEnded = (row: ProofRow) => row.status === 'succeeded' || row.status === 'failed';
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
    context: fieldElementSchema
      .optional()
      .describe(
        'The public context the proof binds to, as a decimal field element; default 0 (bound to nothing)',
      ),
    workflow: z
      .strictObject({
        proofId: z.string().regex(idPattern('prf'), 'a workflow proof id (prf_…)'),
        stage: z.string().min(1).max(64),
      })
      .optional()
      .describe(
        'Make the proof for this stage of this workflow: its context is set, and the inputs must commit to the parameters the workflow fixed',
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
  setup: circuitSetupSchema,
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
      parameterCommitments: z.array(z.string()),
    }),
  ),
  prover: z.object({
    configuredBackend: z.string(),
    lastBackend: z.string().nullable(),
    queue: z
      .object({ waiting: z.number().int(), active: z.number().int(), delayed: z.number().int() })
      .nullable(),
  }),
  verifier: z
    .enum(['native', 'snarkjs'])
    .describe('What checks proofs in this web process: the native verifier where it is built, else snarkjs'),
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

export function blindPolicyRoutes(table: RouteTable): RouteTable {
  return table
    .add({
      method: 'post',
      path: `${base}/prove`,
      operationId: 'proveBlindPolicy',
      summary: 'Queue a Groth16 proof that private inputs satisfy a policy',
      description:
        'Checks the inputs first (400 validation_failed / unknown_policy, 422 policy_not_satisfied, nothing stored), then queues the proof for the prover. The answer carries the salts of the commitments: they are returned once and kept nowhere, so keep them to open a commitment later. Open to anyone; an agent key, when sent, is recorded on the proof. Without a license a caller may prove PROVE_ANON_PER_MINUTE times a minute per client network (an IPv4 address or an IPv6 /64; a free agent counts as the network that registered it) (429 rate_limited), and one network or license may have PROVE_MAX_IN_FLIGHT proofs queued or running (429 too_many_in_flight).',
      tags,
      auth: 'agent-optional',
      // Blind policy proofs serve proof workflows: an organization key needs that line (or admin).
      scope: 'workflows',
      budget: {
        name: 'prove-anon',
        points: (deps) => deps.rateLimit.proveAnonPerMinute ?? env.PROVE_ANON_PER_MINUTE,
        paidExempt: true,
        what: 'proofs without a license from this network',
      },
      secretReply: true,
      body: proveBody,
      responses: {
        202: {
          description: 'Queued (or held); poll the status link',
          schema: proveReply,
          headers: {
            Location: {
              description: 'The proof’s status address',
              required: true,
              schema: { type: 'string' },
            },
          },
        },
      },
      problems: {
        400: ['unknown_policy'],
        404: ['not_found'],
        422: [
          'policy_not_satisfied',
          'policy_parameters_mismatch',
          'policy_proof_not_expected',
          'policy_proof_wrong_policy',
        ],
        429: ['too_many_in_flight'],
      },
      handler: async ({ body, auth, req, deps }) => {
        if (body.context !== undefined && body.workflow) {
          throw new AppError(400, 'validation_failed', 'Send context or workflow, not both.', {
            errors: [{ path: 'workflow', message: 'not with context' }],
          });
        }
        const { row, salts } = await proveBlindPolicy(
          deps.db,
          deps.queues,
          {
            policy: body.policy,
            inputs: body.inputs,
            hold: body.hold === true,
            agentId: auth.kind === 'agent' ? auth.agentId : null,
            context: body.context,
            workflow: body.workflow,
          },
          {
            stageBinding: (proofId, stage) => stageBinding(deps.db, proofId, stage),
            slot: () =>
              inFlightSlot(
                deps,
                'proofs',
                budgetKey(auth, req),
                deps.rateLimit.proveMaxInFlight ?? env.PROVE_MAX_IN_FLIGHT,
                (ids) => proofsInFlight(deps.db, ids),
              ),
          },
        );
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
        'Groth16 verification, VERIFY_PER_MINUTE times a minute per address; nothing is stored. A well-formed proof that does not hold gives valid: false with a reason; a structurally wrong proof or signal list is 400 invalid_proof_format. `context` is the public context the proof is bound to (a workflow stage accepts only its own); `insecureSetup` is true while the keys come from the development setup, under which proofs can be forged. To use a proof as a workflow stage’s evidence, post it with the stage event (`policyProof`).',
      tags,
      budget: {
        name: 'verify',
        points: (deps) => deps.rateLimit.verifyPerMinute ?? env.VERIFY_PER_MINUTE,
        what: 'verifications from this address',
      },
      body: verifyBody,
      responses: {
        200: {
          description: 'The verdict',
          schema: z.object({
            valid: z.boolean(),
            reason: z.string().optional(),
            policy: z.string(),
            context: z.string().optional(),
            insecureSetup: z.boolean(),
          }),
        },
      },
      problems: { 400: ['invalid_proof_format', 'unknown_policy'] },
      handler: async ({ body }) => {
        const verdict = await verifyBlindPolicy(body.policy, body.proof, body.publicSignals);
        const { policy } = body;
        return {
          status: 200,
          body: verdict.valid
            ? { valid: true, policy, context: verdict.context, insecureSetup: verdict.insecureSetup }
            : { valid: false, reason: verdict.reason, policy, insecureSetup: verdict.insecureSetup },
        };
      },
    })
    .add({
      method: 'get',
      path: `${base}/status`,
      operationId: 'blindPolicyStatus',
      summary:
        'The policies, the prover and recent proving times; or one proof by `proofId`, `wait` long-polling for its end (at most 30 s)',
      description:
        'With `proofId` and `wait`, the answer comes when the proof has ended (succeeded or failed) or after `wait` seconds, whichever is first, with the proof as it stands then: one request instead of polling, answered as soon as the prover has stored the proof.',
      tags,
      query: z.strictObject({
        proofId: proofIdSchema.optional(),
        wait: waitSeconds('With proofId: seconds to wait for the proof to end'),
      }),
      responses: {
        200: {
          description: 'Policies and prover status, or (with proofId) the proof',
          schema: z.union([statusSchema, z.object({ proof: proofSchema })]),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ query, req, res, deps }) => {
        if (query.wait !== undefined && !query.proofId) {
          throw new AppError(400, 'validation_failed', 'wait is for one proof: send proofId with it.', {
            errors: [{ path: 'wait', message: 'needs proofId' }],
          });
        }
        if (query.proofId) {
          const found = await getProof(deps.db, query.proofId);
          // The prover hints a proof's end (and its return to the queue): a long poll wakes then.
          const row =
            query.wait && !proofEnded(found)
              ? await waitForHinted(deps.notifier, found, (id) => getProof(deps.db, id), proofEnded, {
                  signal: closedSignal(res),
                  deadline: Date.now() + query.wait * 1000,
                })
              : found;
          const proof = { ...proofView(row), links: proofLinks(req, deps, row.id, row.status) };
          return { status: 200, headers: { 'Cache-Control': 'no-store' }, body: { proof } };
        }
        return {
          status: 200,
          headers: { 'Cache-Control': 'no-store' },
          body: await blindPolicyStatus(deps.db, deps.queues),
        };
      },
    })
    .add({
      method: 'get',
      path: '/api/zk/circuits/{circuit}/ceremony',
      operationId: 'circuitCeremonyTranscript',
      summary: 'A circuit’s phase-2 ceremony transcript and the transparency log leaf that logs it',
      description:
        'The transcript next to the circuit’s artifacts: the r1cs and powers of tau (by blake2b-512) it started from, every contribution’s name and hash in order, the beacon, and the sha256 of the final zkey and its verification key. `log` is its `ceremony_transcript` leaf (the entry’s sha256 is that of the transcript’s canonical JSON) with a C2SP tlog proof; null until a web process has logged it. Check the chain with stock snarkjs: `snarkjs zkey verify <circuit>.r1cs <ptau> <circuit>.zkey` lists the same contribution hashes (docs/zk.md).',
      tags,
      params: z.strictObject({
        circuit: z
          .string()
          .regex(/^[a-z0-9_]{1,64}$/, 'a circuit name (threshold, range, membership, ballot)'),
      }),
      responses: {
        200: {
          description: 'The transcript and its log leaf',
          schema: z.object({
            transcript: transcriptSchema,
            log: z
              .object({
                kind: z.literal('ceremony_transcript'),
                id: z.string(),
                sha256: z.string(),
                index: z.number().int(),
                proof: z.string().nullable().describe('The C2SP tlog proof of the leaf'),
              })
              .nullable(),
          }),
        },
      },
      problems: { 404: ['not_found'] },
      handler: async ({ params, deps }) => {
        const found = await loggedTranscript(deps.db, params.circuit);
        if (!found) throw notFound(`A ceremony transcript for circuit ${params.circuit}`);
        return { status: 200, headers: { 'Cache-Control': 'no-cache' }, body: found };
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
