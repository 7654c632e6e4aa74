// Credential queries: predicates over a credential's fields, proven with circuits/credential.circom
// without revealing any field. A query has up to four terms (a field, an operator, parameters); the
// parameters are committed as Poseidon(p0, p1, p2, p3, salt), fixed by the relying party. The proof
// also shows the issuer's signature, validity at a public time, and that the revocation nonce is not in
// the issuer's revocation tree. docs/credentials.md ("Query proofs").
import { z } from 'zod';
import { AppError, validationFailed } from '../platform/errors';
import { FIELD_PRIME, MAX_VALUE, labelToField, poseidonHash, randomFieldElement } from '../platform/field';
import { checkCredential, claimVector, encodeField, schemaId } from './format';
import type { CredentialDocument, CredentialSchema } from './format';
import { revocationTree } from './issuer';

export const CREDENTIAL_CIRCUIT = 'credential';
export const CREDENTIAL_POLICY_LABEL = 'px.policy.credential.v1';
export const CREDENTIAL_POLICY_FIELD = labelToField(CREDENTIAL_POLICY_LABEL);
/** Terms a proof carries; unused ones are `none`. */
export const MAX_TERMS = 4;
/** Parameters per term: `in` and `nin` take sets of up to this many values. */
export const SET_SIZE = 4;
/** The revocation tree's depth in the circuit: a non-membership path ends within 20 levels. */
export const REVOCATION_DEPTH = 20;
/**
 * Revoked nonces a prover may hand over for the service to build the tree from (~10 Poseidon hashes
 * each); past that, it sends its path (revocationPath, built on its own machine from the issuer's list).
 */
export const MAX_REVOKED = 64;
/** Revoked nonces an issuer's publication lists: what a prover builds its path from. */
export const MAX_PUBLISHED_REVOKED = 4096;

export const operators = ['eq', 'ne', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'nin'] as const;
export type Operator = (typeof operators)[number];
/** The circuit's operator code: 0 is "none" (an unused term). */
export const operatorCode = (op: Operator): number => operators.indexOf(op) + 1;
const ordered: readonly Operator[] = ['lt', 'lte', 'gt', 'gte', 'between'];

export const CREDENTIAL_PUBLIC_SIGNALS = [
  'result',
  'policyId',
  'issuerAx',
  'issuerAy',
  'schemaId',
  'subject',
  'now',
  'revocationRoot',
  ...Array.from({ length: MAX_TERMS }, (_, i) => `fields[${i}]`),
  ...Array.from({ length: MAX_TERMS }, (_, i) => `ops[${i}]`),
  ...Array.from({ length: MAX_TERMS }, (_, i) => `parameterCommitments[${i}]`),
  'context',
] as const;

/** A term of a query as a template states it: which field, which operator. */
export const queryTermSchema = z
  .object({
    field: z.string().min(1).max(32),
    op: z.enum(operators),
  })
  .strict();
export type QueryTerm = z.infer<typeof queryTermSchema>;

const plainValue = z.union([z.number(), z.string().min(1).max(1024)]);
/** A term's parameters in plain: `value` (eq … gte), `low` and `high` (between), `values` (in, nin). */
export const termParametersSchema = z
  .object({
    value: plainValue.optional(),
    low: plainValue.optional(),
    high: plainValue.optional(),
    values: z.array(plainValue).min(1).max(SET_SIZE).optional(),
    salt: z
      .string()
      .regex(/^(0|[1-9]\d{0,77})$/, 'a decimal field element')
      .refine((v) => BigInt(v) < FIELD_PRIME, 'below the BN254 field prime')
      .optional(),
  })
  .strict();
export type TermParameters = z.infer<typeof termParametersSchema>;

/** A term's parameters as published in plain (no salt: a plain parameter is committed with salt 0). */
export const plainParametersSchema = termParametersSchema.omit({ salt: true });
export type PlainParameters = z.infer<typeof plainParametersSchema>;

const opSymbols: Record<Operator, string> = {
  eq: '=',
  ne: '≠',
  lt: '<',
  lte: '≤',
  gt: '>',
  gte: '≥',
  between: 'between',
  in: 'in',
  nin: 'not in',
};

/** A term in words with its parameters in plain: "role = underwriter", "score ≥ 700". */
export function plainTermText(t: QueryTerm & PlainParameters): string {
  const v =
    t.op === 'between' ? `${t.low} and ${t.high}` : t.values ? `{${t.values.join(', ')}}` : String(t.value);
  return `${t.field} ${opSymbols[t.op]} ${v}`;
}

const invalid = (path: string, message: string) => validationFailed([{ path, message }]);

/** The schema's field and the term's check: ordered operators only over integers and dates. */
export function termField(schema: CredentialSchema, term: QueryTerm, path = 'query') {
  const index = schema.fields.findIndex((f) => f.name === term.field);
  if (index < 0) throw invalid(`${path}.field`, `${schema.name} has no field ${term.field}`);
  const field = schema.fields[index]!;
  if (ordered.includes(term.op) && field.type !== 'integer' && field.type !== 'date')
    throw invalid(`${path}.op`, `${term.op} orders values: ${term.field} is a ${field.type}`);
  return { index, field };
}

/** The four parameter values of a term, encoded as the field is (docs/credentials.md). */
export function encodeParameters(
  schema: CredentialSchema,
  term: QueryTerm,
  plain: TermParameters,
  path = 'parameters',
): bigint[] {
  const { field } = termField(schema, term, path);
  const encode = (v: unknown, at: string) => {
    try {
      const encoded = encodeField(field, v);
      if (ordered.includes(term.op) && encoded > MAX_VALUE) throw new Error('at most 2^64 - 1');
      return encoded;
    } catch (err) {
      throw invalid(`${path}.${at}`, (err as Error).message);
    }
  };
  const need = (key: 'value' | 'low' | 'high' | 'values') => {
    if (plain[key] === undefined) throw invalid(`${path}.${key}`, `${term.op} needs ${key}`);
    return plain[key];
  };
  switch (term.op) {
    case 'between': {
      const low = encode(need('low'), 'low');
      const high = encode(need('high'), 'high');
      if (low > high) throw invalid(`${path}.low`, 'low is above high');
      return [low, high, 0n, 0n];
    }
    case 'in':
    case 'nin': {
      const values = (need('values') as unknown[]).map((v, i) => encode(v, `values.${i}`));
      return Array.from({ length: SET_SIZE }, (_, i) => values[i] ?? values[0]!);
    }
    default:
      return [encode(need('value'), 'value'), 0n, 0n, 0n];
  }
}

export const parameterCommitment = (params: readonly bigint[], salt: bigint) =>
  poseidonHash([...params, salt]);

/** The commitment of an unused term: all parameters and the salt 0. */
export const unusedCommitment = () => parameterCommitment([0n, 0n, 0n, 0n], 0n);

/**
 * The public signals a query fixes (schema, fields, operators, parameter commitments), by name, and
 * the salts used: what a stage's gate compares a proof with. Salts left out are drawn.
 */
export async function commitQuery(
  schema: CredentialSchema,
  terms: readonly QueryTerm[],
  parameters: readonly TermParameters[],
  path = 'query',
  maxTerms = MAX_TERMS,
): Promise<{ signals: Record<string, string>; salts: string[] }> {
  if (terms.length < 1 || terms.length > maxTerms) throw new Error(`a query has 1 to ${maxTerms} terms`);
  const signals: Record<string, string> = { schemaId: schemaId(schema) };
  const salts: string[] = [];
  for (let i = 0; i < maxTerms; i++) {
    const term = terms[i];
    if (!term) {
      signals[`fields[${i}]`] = '0';
      signals[`ops[${i}]`] = '0';
      signals[`parameterCommitments[${i}]`] = String(await unusedCommitment());
      continue;
    }
    const plain = parameters[i];
    if (!plain) throw invalid(`${path}.${i}`, `the parameters of ${term.field} ${term.op}`);
    const params = encodeParameters(schema, term, plain, `${path}.${i}`);
    const salt = plain.salt !== undefined ? BigInt(plain.salt) : randomFieldElement();
    signals[`fields[${i}]`] = String(termField(schema, term).index);
    signals[`ops[${i}]`] = String(operatorCode(term.op));
    signals[`parameterCommitments[${i}]`] = String(await parameterCommitment(params, salt));
    salts.push(String(salt));
  }
  return { signals, salts };
}

/** Whether a term holds over an encoded field value: what the circuit computes. */
function holds(op: Operator, x: bigint, p: readonly bigint[]): boolean {
  switch (op) {
    case 'eq':
      return x === p[0];
    case 'ne':
      return x !== p[0];
    case 'lt':
      return x < p[0]!;
    case 'lte':
      return x <= p[0]!;
    case 'gt':
      return x > p[0]!;
    case 'gte':
      return x >= p[0]!;
    case 'between':
      return x >= p[0]! && x <= p[1]!;
    case 'in':
      return p.includes(x);
    case 'nin':
      return !p.includes(x);
  }
}

export interface RevocationPath {
  root: string;
  siblings: string[];
  oldKey: string;
  oldValue: string;
  isOld0: string;
}

/**
 * The non-membership path of `nonce` in the tree of the revoked nonces (issuer.ts `revocationTree`:
 * key the nonce, value 1), as circomlib's SMTVerifier takes it. Throws 422 `credential_revoked` when
 * the nonce is in it.
 */
export async function revocationPath(revoked: readonly string[], nonce: string): Promise<RevocationPath> {
  const tree = await revocationTree(revoked);
  const { proof } = await tree.generateProof(BigInt(nonce) % FIELD_PRIME);
  if (proof.existence) throw new AppError(422, 'credential_revoked', 'The issuer revoked this credential.');
  const siblings = proof.allSiblings().map((s) => String(s.bigInt()));
  if (siblings.length > REVOCATION_DEPTH)
    throw new AppError(
      422,
      'revocation_tree_too_deep',
      `The nonce's path in the revocation tree is ${siblings.length} levels; the circuit takes ${REVOCATION_DEPTH}.`,
    );
  // The path ends at an empty place (isOld0), or at another nonce's leaf that shares its bits so far.
  const other = proof.nodeAux;
  return {
    root: String((await tree.root()).bigInt()),
    siblings: [...siblings, ...Array.from({ length: REVOCATION_DEPTH - siblings.length }, () => '0')],
    oldKey: other ? String(other.key.bigInt()) : '0',
    oldValue: other ? String(other.value.bigInt()) : '0',
    isOld0: other ? '0' : '1',
  };
}

export interface QueryProofInput {
  credential: unknown;
  terms: readonly QueryTerm[];
  /** The terms' parameters, in the terms' order. */
  parameters: readonly TermParameters[];
  /** The issuer's revoked nonces as published (the tree the root is of), or the path in that tree. */
  revocation: { revoked: readonly string[] } | { path: RevocationPath };
  /** Seconds since 1970: the time the credential is shown valid at. */
  now: bigint;
  context: bigint;
}

const notSatisfied = (code: string, detail: string) => new AppError(422, code, detail);

/** The credential's part of a circuit input (circuits/lib/credential.circom), with its public signals. */
export interface CredentialWitness {
  input: Record<string, string | string[] | string[][]>;
  /** issuerAx, issuerAy, schemaId, subject, now, revocationRoot and each term's field, op, commitment. */
  signals: Record<string, string>;
  salts: string[];
}

/**
 * The credential check's circuit input for `maxTerms` terms, after checking in plain everything the
 * circuit will (so a failing witness is a 4xx, never a prover error).
 */
export async function credentialWitness(
  input: Omit<QueryProofInput, 'context'>,
  maxTerms = MAX_TERMS,
): Promise<CredentialWitness> {
  const checked = await checkCredential(input.credential);
  if (!checked.ok || !checked.claim)
    throw validationFailed(
      checked.problems.map((message) => ({ path: 'credential', message })),
      'The credential does not check.',
    );
  const doc = input.credential as CredentialDocument;
  const schema = checked.claim.schema;
  const claim = claimVector(checked.claim);
  const [from, until, nonce] = [claim[2]!, claim[3]!, claim[4]!];
  if (input.now < from) throw notSatisfied('credential_not_yet_valid', 'The credential is not valid yet.');
  if (input.now >= until) throw notSatisfied('credential_expired', 'The credential has expired.');
  const { signals, salts } = await commitQuery(schema, input.terms, input.parameters, 'query', maxTerms);
  const params: string[][] = [];
  const saltList: string[] = [];
  for (let i = 0; i < maxTerms; i++) {
    const term = input.terms[i];
    if (!term) {
      params.push(['0', '0', '0', '0']);
      saltList.push('0');
      continue;
    }
    const p = encodeParameters(schema, term, input.parameters[i]!);
    const x = claim[5 + termField(schema, term).index]!;
    if (!holds(term.op, x, p))
      throw notSatisfied(
        'policy_not_satisfied',
        `The credential's ${term.field} does not satisfy ${term.op}.`,
      );
    params.push(p.map(String));
    saltList.push(salts[i]!);
  }
  let path: RevocationPath;
  if ('path' in input.revocation) {
    path = input.revocation.path;
    if (!(await checkRevocationPath(path, String(nonce))))
      throw notSatisfied(
        'revocation_path_invalid',
        'The revocation path does not show the credential’s nonce absent from a tree with that root.',
      );
  } else path = await revocationPath(input.revocation.revoked, String(nonce));
  const all: Record<string, string> = {
    issuerAx: doc.proof.publicKey[0],
    issuerAy: doc.proof.publicKey[1],
    ...signals,
    subject: String(claim[1]),
    now: String(input.now),
    revocationRoot: path.root,
  };
  const each = (name: string) => Array.from({ length: maxTerms }, (_, i) => signals[`${name}[${i}]`]!);
  return {
    input: {
      claim: claim.map(String),
      sigR8x: doc.proof.signature.R8[0],
      sigR8y: doc.proof.signature.R8[1],
      sigS: doc.proof.signature.S,
      revocationSiblings: path.siblings,
      revocationOldKey: path.oldKey,
      revocationOldValue: path.oldValue,
      revocationIsOld0: path.isOld0,
      params,
      salts: saltList,
      issuerAx: all.issuerAx!,
      issuerAy: all.issuerAy!,
      schemaId: all.schemaId!,
      now: all.now!,
      revocationRoot: all.revocationRoot!,
      fields: each('fields'),
      ops: each('ops'),
      parameterCommitments: each('parameterCommitments'),
    },
    signals: all,
    salts,
  };
}

/** The circuit input of a query proof (circuits/credential.circom), with its public signals by name. */
export async function queryCircuitInput(input: QueryProofInput): Promise<{
  circuitInput: Record<string, string | string[] | string[][]>;
  signals: Record<string, string>;
  salts: string[];
}> {
  const w = await credentialWitness(input);
  const signals: Record<string, string> = {
    result: '1',
    policyId: String(CREDENTIAL_POLICY_FIELD),
    ...w.signals,
    context: String(input.context),
  };
  return {
    circuitInput: {
      ...w.input,
      policyId: signals.policyId!,
      subject: signals.subject!,
      context: signals.context!,
    },
    signals,
    salts: w.salts,
  };
}

const bitOf = (v: bigint, i: number) => (v >> BigInt(i)) & 1n;

/**
 * Checks a non-membership path in plain, as circomlib's SMTVerifier does (fnc = 1): the levels in use
 * end at the last non-zero sibling; the leaf there is empty, or another key's that shares the path;
 * hashing up with the siblings gives the root. ~20 Poseidon hashes.
 */
export async function checkRevocationPath(path: RevocationPath, nonce: string): Promise<boolean> {
  const key = BigInt(nonce);
  const siblings = path.siblings.map(BigInt);
  let levels = siblings.length;
  while (levels > 0 && siblings[levels - 1] === 0n) levels--;
  let node: bigint;
  if (path.isOld0 === '1') node = 0n;
  else {
    const oldKey = BigInt(path.oldKey);
    if (oldKey === key) return false;
    for (let i = 0; i < levels; i++) if (bitOf(oldKey, i) !== bitOf(key, i)) return false;
    node = await poseidonHash([oldKey, BigInt(path.oldValue), 1n]);
  }
  for (let i = levels - 1; i >= 0; i--)
    node =
      bitOf(key, i) === 1n
        ? await poseidonHash([siblings[i]!, node])
        : await poseidonHash([node, siblings[i]!]);
  return node === BigInt(path.root);
}
