// The blind-policy registry: for each policy its circuit, the schema of its private inputs, the
// plain check run before any proving, and the builder of the circuit input with its commitments.
import { z } from 'zod';
import { AppError, validationFailed } from '../platform/errors';
import {
  FIELD_PRIME,
  MAX_SET_SIZE,
  MAX_VALUE,
  MEMBERSHIP_DEPTH,
  VALUE_BITS,
  labelToField,
  merkleRoot,
  merkleWitness,
  poseidonHash,
  randomFieldElement,
} from '../platform/field';
import { credentialSchemaSchema } from '../credentials/format';
import {
  CREDENTIAL_CIRCUIT,
  CREDENTIAL_POLICY_FIELD,
  CREDENTIAL_POLICY_LABEL,
  CREDENTIAL_PUBLIC_SIGNALS,
  MAX_REVOKED,
  MAX_TERMS,
  REVOCATION_DEPTH,
  commitQuery,
  queryCircuitInput,
  queryTermSchema,
  termParametersSchema,
} from '../credentials/query';

export type PolicyId = 'threshold' | 'range' | 'membership' | 'credential';
export const policyIds = [
  'threshold',
  'range',
  'membership',
  'credential',
] as const satisfies readonly PolicyId[];

/** Input to the circom witness calculator: decimal strings keyed by signal name. */
export type CircuitInput = Record<string, string | string[] | string[][]>;

export interface PreparedInput {
  circuitInput: CircuitInput;
  /** The public commitments, by signal name. */
  commitments: Record<string, string>;
  /** The salts used, given or generated. Secret: they go back to the caller only, never to logs. */
  salts: Record<string, string>;
}

export interface PolicyDefinition<S extends z.ZodType = z.ZodType> {
  id: PolicyId;
  name: string;
  description: string;
  circuit: string;
  /** Human-readable form of the policy id; its bytes are the field constant pinned by the circuit. */
  label: string;
  fieldId: bigint;
  /** Public signal names in circuit order (outputs first); must match the manifest. */
  publicSignals: readonly string[];
  inputSchema: S;
  /** Throws AppError 422 `policy_not_satisfied` when the inputs cannot yield a proof. */
  check(inputs: z.output<S>): void;
  /** The circuit input; `context` is the public signal that binds the proof to where it may be used. */
  buildInput(inputs: z.output<S>, context: bigint): Promise<PreparedInput>;
  /** The policy's parameters (the threshold, the range, the set): what a relying party fixes. */
  parameters: PolicyParameters;
}

/**
 * The parameters of a policy as a relying party fixes them: by the commitments it expects in the
 * proof's public signals, or in plain (with optional salts) for the service to commit.
 */
export interface PolicyParameters<P extends z.ZodType = z.ZodType> {
  /** The public signals that commit to the parameters, in circuit order. */
  commitmentSignals: readonly string[];
  /** The plain parameters with optional salts; salts left out are generated. */
  plainSchema: P;
  /** Commits plain parameters: the commitments by signal name, and the salts used (secret). */
  commit(plain: z.output<P>): Promise<{ commitments: Record<string, string>; salts: Record<string, string> }>;
}

const decimal = /^(0|[1-9]\d*)$/;

/** A bounded integer: a decimal string or a safe integer, 0 to 2^64 - 1. */
const uint = z
  .union([
    z.string().regex(decimal, 'a non-negative integer in decimal').max(20, `at most ${MAX_VALUE}`),
    z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER, 'above 2^53 - 1: send a decimal string'),
  ])
  .transform((v) => BigInt(v))
  .refine((v) => v <= MAX_VALUE, `at most 2^${VALUE_BITS} - 1`);

/** A salt: a field element in decimal. Omitted salts are generated. */
const salt = z
  .string()
  .regex(decimal, 'a non-negative integer in decimal')
  .max(78)
  .transform((v) => BigInt(v))
  .refine((v) => v < FIELD_PRIME, 'below the BN254 scalar field prime')
  .optional();

const notSatisfied = (detail: string) => new AppError(422, 'policy_not_satisfied', detail);

const commit = (value: bigint, saltValue: bigint) => poseidonHash([value, saltValue]);
const saltOr = (given: bigint | undefined) => given ?? randomFieldElement();

/** Keeps each policy's input type while the registry holds them side by side. */
const definePolicy = <S extends z.ZodType>(policy: PolicyDefinition<S>): PolicyDefinition<S> => policy;
const defineParameters = <P extends z.ZodType>(p: PolicyParameters<P>): PolicyParameters<P> => p;

const labels = {
  threshold: 'px.policy.threshold.v1',
  range: 'px.policy.range.v1',
  membership: 'px.policy.membership.v1',
} as const;
const fieldIds = {
  threshold: labelToField(labels.threshold),
  range: labelToField(labels.range),
  membership: labelToField(labels.membership),
};

const threshold = definePolicy({
  id: 'threshold',
  name: 'Threshold',
  description: `Proves a private value is at least a private threshold (both integers below 2^${VALUE_BITS}).`,
  circuit: 'threshold',
  label: labels.threshold,
  fieldId: fieldIds.threshold,
  publicSignals: ['result', 'valueCommitment', 'thresholdCommitment', 'policyId', 'context'],
  inputSchema: z.strictObject({ value: uint, threshold: uint, valueSalt: salt, thresholdSalt: salt }),
  check(inputs) {
    if (inputs.value < inputs.threshold) throw notSatisfied('The value is below the threshold.');
  },
  parameters: defineParameters({
    commitmentSignals: ['thresholdCommitment'],
    plainSchema: z.strictObject({ threshold: uint, thresholdSalt: salt }),
    async commit(plain) {
      const thresholdSalt = saltOr(plain.thresholdSalt);
      return {
        commitments: { thresholdCommitment: String(await commit(plain.threshold, thresholdSalt)) },
        salts: { thresholdSalt: String(thresholdSalt) },
      };
    },
  }),
  async buildInput(inputs, context) {
    const valueSalt = saltOr(inputs.valueSalt);
    const thresholdSalt = saltOr(inputs.thresholdSalt);
    const commitments = {
      valueCommitment: String(await commit(inputs.value, valueSalt)),
      thresholdCommitment: String(await commit(inputs.threshold, thresholdSalt)),
    };
    const salts = { valueSalt: String(valueSalt), thresholdSalt: String(thresholdSalt) };
    return {
      circuitInput: {
        value: String(inputs.value),
        threshold: String(inputs.threshold),
        ...salts,
        ...commitments,
        policyId: String(fieldIds.threshold),
        context: String(context),
      },
      commitments,
      salts,
    };
  },
});

const range = definePolicy({
  id: 'range',
  name: 'Range',
  description: `Proves a private value lies within a private inclusive range [low, high] (integers below 2^${VALUE_BITS}).`,
  circuit: 'range',
  label: labels.range,
  fieldId: fieldIds.range,
  publicSignals: ['result', 'valueCommitment', 'lowCommitment', 'highCommitment', 'policyId', 'context'],
  inputSchema: z.strictObject({
    value: uint,
    low: uint,
    high: uint,
    valueSalt: salt,
    lowSalt: salt,
    highSalt: salt,
  }),
  check(inputs) {
    if (inputs.low > inputs.high) throw notSatisfied('The range is empty: low is above high.');
    if (inputs.value < inputs.low || inputs.value > inputs.high) {
      throw notSatisfied('The value is outside the range.');
    }
  },
  parameters: defineParameters({
    commitmentSignals: ['lowCommitment', 'highCommitment'],
    plainSchema: z
      .strictObject({ low: uint, high: uint, lowSalt: salt, highSalt: salt })
      .refine((p) => p.low <= p.high, { message: 'low is above high', path: ['low'] }),
    async commit(plain) {
      const lowSalt = saltOr(plain.lowSalt);
      const highSalt = saltOr(plain.highSalt);
      return {
        commitments: {
          lowCommitment: String(await commit(plain.low, lowSalt)),
          highCommitment: String(await commit(plain.high, highSalt)),
        },
        salts: { lowSalt: String(lowSalt), highSalt: String(highSalt) },
      };
    },
  }),
  async buildInput(inputs, context) {
    const valueSalt = saltOr(inputs.valueSalt);
    const lowSalt = saltOr(inputs.lowSalt);
    const highSalt = saltOr(inputs.highSalt);
    const commitments = {
      valueCommitment: String(await commit(inputs.value, valueSalt)),
      lowCommitment: String(await commit(inputs.low, lowSalt)),
      highCommitment: String(await commit(inputs.high, highSalt)),
    };
    const salts = { valueSalt: String(valueSalt), lowSalt: String(lowSalt), highSalt: String(highSalt) };
    return {
      circuitInput: {
        value: String(inputs.value),
        low: String(inputs.low),
        high: String(inputs.high),
        ...salts,
        ...commitments,
        policyId: String(fieldIds.range),
        context: String(context),
      },
      commitments,
      salts,
    };
  },
});

const membership = definePolicy({
  id: 'membership',
  name: 'Set membership',
  description:
    `Proves a private value is a member of a private set of up to ${MAX_SET_SIZE} integers below 2^${VALUE_BITS}, ` +
    `committed as Poseidon(root, setSalt) of a depth-${MEMBERSHIP_DEPTH} Poseidon Merkle tree.`,
  circuit: 'membership',
  label: labels.membership,
  fieldId: fieldIds.membership,
  publicSignals: ['result', 'valueCommitment', 'setCommitment', 'policyId', 'context'],
  inputSchema: z.strictObject({
    value: uint,
    set: z.array(uint).min(1).max(MAX_SET_SIZE),
    valueSalt: salt,
    setSalt: salt,
  }),
  check(inputs) {
    if (!inputs.set.includes(inputs.value)) throw notSatisfied('The value is not a member of the set.');
  },
  parameters: defineParameters({
    commitmentSignals: ['setCommitment'],
    plainSchema: z.strictObject({ set: z.array(uint).min(1).max(MAX_SET_SIZE), setSalt: salt }),
    async commit(plain) {
      const setSalt = saltOr(plain.setSalt);
      return {
        commitments: { setCommitment: String(await commit(await merkleRoot(plain.set), setSalt)) },
        salts: { setSalt: String(setSalt) },
      };
    },
  }),
  async buildInput(inputs, context) {
    const valueSalt = saltOr(inputs.valueSalt);
    const setSalt = saltOr(inputs.setSalt);
    const path = await merkleWitness(inputs.set, inputs.set.indexOf(inputs.value));
    const commitments = {
      valueCommitment: String(await commit(inputs.value, valueSalt)),
      setCommitment: String(await commit(path.root, setSalt)),
    };
    const salts = { valueSalt: String(valueSalt), setSalt: String(setSalt) };
    return {
      circuitInput: {
        value: String(inputs.value),
        valueSalt: salts.valueSalt,
        pathElements: path.pathElements.map(String),
        pathIndex: String(path.pathIndex),
        setSalt: salts.setSalt,
        ...commitments,
        policyId: String(fieldIds.membership),
        context: String(context),
      },
      commitments,
      salts,
    };
  },
});

/** One term of a query with its parameters, as a prover or a relying party states it. */
const queryTerm = queryTermSchema.extend(termParametersSchema.shape).strict();
const termsOf = (query: Array<z.output<typeof queryTerm>>) => ({
  terms: query.map(({ field, op }) => ({ field, op })),
  parameters: query.map(({ field: _f, op: _o, ...params }) => params),
});
const subjectSchema = z
  .string()
  .regex(decimal, 'a decimal field element')
  .max(78)
  .refine((v) => BigInt(v) < FIELD_PRIME, 'below the BN254 scalar field prime');

/**
 * A credential query: an issuer-signed credential (docs/credentials.md) satisfies up to four
 * predicates over its fields, is valid at a public time and not revoked under the issuer's revocation
 * root, for a public subject commitment; no field is revealed.
 */
const credential = definePolicy({
  id: 'credential',
  name: 'Credential query',
  description: `Proves an issuer-signed credential satisfies up to ${MAX_TERMS} predicates over its fields (eq, ne, lt, lte, gt, gte, between, in, nin), is unexpired and unrevoked, without revealing any field.`,
  circuit: CREDENTIAL_CIRCUIT,
  label: CREDENTIAL_POLICY_LABEL,
  fieldId: CREDENTIAL_POLICY_FIELD,
  publicSignals: CREDENTIAL_PUBLIC_SIGNALS,
  inputSchema: z.strictObject({
    credential: z.record(z.string(), z.unknown()),
    query: z.array(queryTerm).min(1).max(MAX_TERMS),
    /** The issuer's revoked nonces as it publishes them (the tree the proof's root is of)… */
    revoked: z.array(subjectSchema).max(MAX_REVOKED).optional(),
    /** …or the credential's non-membership path in that tree (`npm run px -- credential path`). */
    revocation: z
      .strictObject({
        root: subjectSchema,
        siblings: z.array(subjectSchema).length(REVOCATION_DEPTH),
        oldKey: subjectSchema,
        oldValue: subjectSchema,
        isOld0: z.enum(['0', '1']),
      })
      .optional(),
    /** Seconds since 1970 the credential is shown valid at; now when left out. */
    now: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  }),
  check() {
    // Everything is checked in plain while the input is built: the signature takes the curve.
  },
  parameters: defineParameters({
    commitmentSignals: CREDENTIAL_PUBLIC_SIGNALS.filter(
      (n) => !['result', 'policyId', 'issuerAx', 'issuerAy', 'now', 'revocationRoot', 'context'].includes(n),
    ),
    plainSchema: z.strictObject({
      schema: credentialSchemaSchema,
      subject: subjectSchema,
      query: z.array(queryTerm).min(1).max(MAX_TERMS),
    }),
    async commit(plain) {
      const { terms, parameters } = termsOf(plain.query);
      const { signals, salts } = await commitQuery(plain.schema, terms, parameters);
      return {
        commitments: { ...signals, subject: plain.subject },
        salts: Object.fromEntries(salts.map((salt, i) => [`query.${i}.salt`, salt])),
      };
    },
  }),
  async buildInput(inputs, context) {
    const { terms, parameters } = termsOf(inputs.query);
    const now = BigInt(inputs.now ?? Math.floor(Date.now() / 1000));
    const built = await queryCircuitInput({
      credential: inputs.credential,
      terms,
      parameters,
      revocation: inputs.revocation ? { path: inputs.revocation } : { revoked: inputs.revoked ?? [] },
      now,
      context,
    });
    const { result: _r, policyId: _p, context: _c, ...commitments } = built.signals;
    return {
      circuitInput: built.circuitInput,
      commitments,
      salts: Object.fromEntries(built.salts.map((salt, i) => [`query.${i}.salt`, salt])),
    };
  },
});

export const policies: Record<PolicyId, PolicyDefinition> = { threshold, range, membership, credential };

export function isPolicyId(id: unknown): id is PolicyId {
  return typeof id === 'string' && Object.hasOwn(policies, id);
}

export function getPolicy(id: string): PolicyDefinition {
  if (!isPolicyId(id)) {
    throw new AppError(400, 'unknown_policy', `Unknown policy; known policies: ${policyIds.join(', ')}.`);
  }
  return policies[id];
}

/** Validates raw private inputs; errors name the field, never echo the value. */
export function parsePolicyInputs(policy: PolicyDefinition, raw: unknown): unknown {
  const parsed = policy.inputSchema.safeParse(raw);
  if (!parsed.success) {
    throw validationFailed(
      parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
      `The ${policy.id} policy inputs are not valid.`,
    );
  }
  return parsed.data;
}

/**
 * Validate, check, build: everything before the witness. Throws 400/422 AppErrors. `context` binds
 * the proof to where it may be used (0: nowhere in particular; no workflow stage accepts it).
 */
export async function preparePolicyInput(
  policyId: string,
  raw: unknown,
  options: { context?: bigint } = {},
): Promise<PreparedInput> {
  const policy = getPolicy(policyId);
  const inputs = parsePolicyInputs(policy, raw);
  policy.check(inputs);
  const context = options.context ?? 0n;
  if (context < 0n || context >= FIELD_PRIME) throw new RangeError('context must be a field element');
  return policy.buildInput(inputs, context);
}

/** Poseidon(value, salt): the commitment a relying party recomputes from a disclosed value and salt. */
export async function commitValue(value: bigint, saltValue: bigint): Promise<bigint> {
  return commit(value, saltValue);
}

/** Poseidon(root, salt) of a membership set, for a relying party that knows the set and its salt. */
export async function commitSet(members: bigint[], saltValue: bigint): Promise<bigint> {
  return commit(await merkleRoot(members), saltValue);
}
