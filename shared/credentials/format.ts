// Credentials: claims an issuer (a credit bureau, a KYC provider, an HR system, a wallet) signs about a
// subject, as W3C Verifiable Credentials 2.0 documents whose proof is an EdDSA signature over BabyJubjub
// with Poseidon (circomlib's EdDSAPoseidonVerifier checks it in a circuit) of the Poseidon hash of the
// claim's field encoding. docs/credentials.md specifies every step; this file is that specification in
// code. Pure: no configuration, no database; @iden3/js-crypto for the curve (its Poseidon and EdDSA are
// circomlibjs's, bit for bit: test/credentials/issuer.test.ts signs with circomlibjs).
import { createHash } from 'node:crypto';
import { PrivateKey, Signature, eddsa } from '@iden3/js-crypto';
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { FIELD_PRIME, MAX_VALUE, poseidonHash } from '../platform/field';

export const SCHEMA_TYPE = 'proof-exchange/credential-schema/v1';
export const VC_CONTEXT = 'https://www.w3.org/ns/credentials/v2';
export const CREDENTIAL_TYPE = 'ProofExchangeCredential';
export const PROOF_TYPE = 'ProofExchangeBabyJubJubPoseidon2026';
export const STATUS_TYPE = 'ProofExchangeRevocationNonce2026';

/** Fields a schema may have: the circuit reads a claim of this many (unused ones are 0). */
export const MAX_FIELDS = 8;

/** The claim's vector: 5 header elements and the fields, hashed with one Poseidon of 13 inputs. */
export const CLAIM_LENGTH = 5 + MAX_FIELDS;

export const fieldTypes = ['integer', 'date', 'enum', 'string'] as const;
export type FieldType = (typeof fieldTypes)[number];

const fieldName = z
  .string()
  .regex(/^[a-z][A-Za-z0-9]{0,31}$/, 'a field name: a lowercase letter, then letters or digits');

export const schemaFieldSchema = z.discriminatedUnion('type', [
  z.object({ name: fieldName, type: z.literal('integer') }).strict(),
  z.object({ name: fieldName, type: z.literal('date') }).strict(),
  z.object({ name: fieldName, type: z.literal('string') }).strict(),
  z
    .object({
      name: fieldName,
      type: z.literal('enum'),
      values: z.array(z.string().min(1).max(64)).min(1).max(256),
    })
    .strict(),
]);

export const credentialSchemaSchema = z
  .object({
    type: z.literal(SCHEMA_TYPE),
    name: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'a schema name: lowercase letters, digits, dashes'),
    version: z.number().int().min(1).max(1_000_000),
    fields: z.array(schemaFieldSchema).min(1).max(MAX_FIELDS),
  })
  .strict()
  .superRefine((s, ctx) => {
    const names = s.fields.map((f) => f.name);
    if (new Set(names).size !== names.length) ctx.addIssue({ code: 'custom', message: 'field names repeat' });
    for (const f of s.fields)
      if (f.type === 'enum' && new Set(f.values).size !== f.values.length)
        ctx.addIssue({ code: 'custom', message: `the values of ${f.name} repeat` });
  });
export type CredentialSchema = z.infer<typeof credentialSchemaSchema>;

/** sha256 of a tagged text, cut to 248 bits: always a field element. */
const taggedHash = (tag: string, text: string): bigint =>
  BigInt(`0x${createHash('sha256').update(`${tag}\n${text}`, 'utf8').digest('hex')}`) >> 8n;

/** The schema's id: the 248-bit sha256 of its canonical JSON (RFC 8785), decimal. */
export const schemaId = (schema: CredentialSchema): string =>
  String(taggedHash(SCHEMA_TYPE, canonicalJson(schema)));

/** A date field's or a validity time's value: whole seconds since 1970-01-01T00:00:00Z. */
export function secondsOf(iso: string): bigint {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms) || !/(Z|[+-]\d{2}:\d{2})$|^\d{4}-\d{2}-\d{2}$/.test(iso))
    throw new Error(`not an ISO 8601 date or time with a zone: ${iso}`);
  if (ms < 0) throw new Error(`a time before 1970: ${iso}`);
  return BigInt(Math.floor(ms / 1000));
}

/** One field's value as the field element the claim holds (docs/credentials.md, "Field encoding"). */
export function encodeField(field: CredentialSchema['fields'][number], value: unknown): bigint {
  switch (field.type) {
    case 'integer': {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
        throw new Error(`${field.name}: an integer from 0 to 2^53 - 1`);
      return BigInt(value);
    }
    case 'date': {
      if (typeof value !== 'string') throw new Error(`${field.name}: an ISO 8601 date or time`);
      const s = secondsOf(value);
      if (s > MAX_VALUE) throw new Error(`${field.name}: too late`);
      return s;
    }
    case 'enum': {
      const i = typeof value === 'string' ? field.values.indexOf(value) : -1;
      if (i < 0) throw new Error(`${field.name}: one of ${field.values.join(', ')}`);
      return BigInt(i);
    }
    case 'string':
      if (typeof value !== 'string' || value.length === 0 || value.length > 1024)
        throw new Error(`${field.name}: a string of 1 to 1024 characters`);
      return taggedHash('proof-exchange/credential-string/v1', value.normalize('NFC'));
  }
}

const decimal = z.string().regex(/^(0|[1-9]\d{0,76})$/, 'a decimal field element');
const fieldElement = decimal.refine((v) => BigInt(v) < FIELD_PRIME, 'below the BN254 field prime');
const urn = (kind: string) =>
  z.string().regex(new RegExp(`^urn:proof-exchange:${kind}:`), `urn:proof-exchange:${kind}:…`);

/** The credential as a W3C VC 2.0 JSON document with its proof (docs/credentials.md, "The document"). */
export const credentialDocumentSchema = z
  .object({
    '@context': z.tuple([z.literal(VC_CONTEXT)]),
    type: z.tuple([z.literal('VerifiableCredential'), z.literal(CREDENTIAL_TYPE)]),
    issuer: z.object({ id: urn('issuer'), name: z.string().min(1).max(200).optional() }).strict(),
    validFrom: z.iso.datetime(),
    validUntil: z.iso.datetime(),
    credentialSchema: z
      .object({
        id: urn('schema'),
        type: z.literal('ProofExchangeCredentialSchema2026'),
        schema: credentialSchemaSchema,
      })
      .strict(),
    credentialSubject: z.record(z.string(), z.unknown()),
    credentialStatus: z
      .object({ id: urn('revocation'), type: z.literal(STATUS_TYPE), revocationNonce: fieldElement })
      .strict(),
    proof: z
      .object({
        type: z.literal(PROOF_TYPE),
        verificationMethod: urn('issuer'),
        proofPurpose: z.literal('assertionMethod'),
        publicKey: z.tuple([fieldElement, fieldElement]),
        claimHash: fieldElement,
        signature: z.object({ R8: z.tuple([fieldElement, fieldElement]), S: fieldElement }).strict(),
      })
      .strict(),
  })
  .strict();
export type CredentialDocument = z.infer<typeof credentialDocumentSchema>;

/** An issuer key's id: the sha256 of its public point, 64 hex (docs/credentials.md, "Keys"). */
export const issuerKeyId = (publicKey: readonly [string, string]): string =>
  createHash('sha256')
    .update(`proof-exchange/issuer-key/v1\n${publicKey[0]}\n${publicKey[1]}`, 'utf8')
    .digest('hex');

export interface Claim {
  schema: CredentialSchema;
  /** The subject's commitment (decimal field element): what a workflow's application records. */
  subject: string;
  validFrom: string;
  validUntil: string;
  revocationNonce: string;
  /** The subject's fields by name, as the schema types them. */
  fields: Record<string, unknown>;
}

/** The claim's 13 field elements, in order: schema id, subject, from, until, nonce, fields (0 unused). */
export function claimVector(claim: Claim): bigint[] {
  const known = new Set(claim.schema.fields.map((f) => f.name));
  for (const name of Object.keys(claim.fields))
    if (!known.has(name)) throw new Error(`${name}: not a field of ${claim.schema.name}`);
  const values = claim.schema.fields.map((f) => {
    if (!(f.name in claim.fields)) throw new Error(`${f.name}: missing`);
    return encodeField(f, claim.fields[f.name]);
  });
  const from = secondsOf(claim.validFrom);
  const until = secondsOf(claim.validUntil);
  if (until <= from) throw new Error('validUntil is not after validFrom');
  for (const [name, v] of [
    ['subject', claim.subject],
    ['revocationNonce', claim.revocationNonce],
  ] as const)
    if (!fieldElement.safeParse(v).success) throw new Error(`${name}: a decimal field element`);
  return [
    BigInt(schemaId(claim.schema)),
    BigInt(claim.subject),
    from,
    until,
    BigInt(claim.revocationNonce),
    ...values,
    ...Array.from({ length: MAX_FIELDS - values.length }, () => 0n),
  ];
}

export const claimHash = async (claim: Claim): Promise<bigint> => poseidonHash(claimVector(claim));

const SUBJECT_PREFIX = 'urn:proof-exchange:subject:';

/** The claim a document states: its schema, subject, times, nonce and fields. */
export function claimOf(doc: CredentialDocument): Claim {
  const { id, ...fields } = doc.credentialSubject;
  if (typeof id !== 'string' || !id.startsWith(SUBJECT_PREFIX))
    throw new Error(`credentialSubject.id: ${SUBJECT_PREFIX}<commitment>`);
  return {
    schema: doc.credentialSchema.schema,
    subject: id.slice(SUBJECT_PREFIX.length),
    validFrom: doc.validFrom,
    validUntil: doc.validUntil,
    revocationNonce: doc.credentialStatus.revocationNonce,
    fields,
  };
}

/** An EdDSA signature over BabyJubjub with Poseidon, decimal: R8 a curve point, S a scalar. */
export interface PoseidonSignature {
  R8: [string, string];
  S: string;
}

/** The public point of a 32-byte EdDSA private key (circomlibjs's `eddsa.prv2pub`), decimal. */
export function eddsaPublicKey(privateKey: Uint8Array): [string, string] {
  const [x, y] = new PrivateKey(privateKey).public().p;
  return [String(x), String(y)];
}

/** Signs a field element (circomlibjs's `eddsa.signPoseidon`): what EdDSAPoseidonVerifier checks. */
export function eddsaSign(privateKey: Uint8Array, message: bigint): PoseidonSignature {
  const sig = new PrivateKey(privateKey).signPoseidon(message);
  return { R8: [String(sig.R8[0]), String(sig.R8[1])], S: String(sig.S) };
}

/**
 * Whether `signature` signs `message` under `publicKey`; false, never a throw, for points off the
 * curve, a scalar out of range or numbers that are not decimal field elements.
 */
export function eddsaVerify(
  message: bigint,
  signature: PoseidonSignature,
  publicKey: [string, string],
): boolean {
  try {
    const point = (p: [string, string]): [bigint, bigint] => [BigInt(p[0]), BigInt(p[1])];
    const numbers = [...point(signature.R8), ...point(publicKey), message];
    if (numbers.some((n) => n < 0n || n >= FIELD_PRIME)) return false;
    return eddsa.verifyPoseidon(
      message,
      new Signature(point(signature.R8), BigInt(signature.S)),
      point(publicKey),
    );
  } catch {
    return false;
  }
}

export interface CredentialCheck {
  ok: boolean;
  /** What does not hold, one line each (none when ok). */
  problems: string[];
  claim?: Claim;
  keyId?: string;
}

/**
 * Checks a credential document on its own: its shape, that its ids agree (schema, subject, issuer key,
 * revocation), that the claim hash is the Poseidon hash of its fields' encoding, and that the
 * signature over that hash verifies under the key it names. Whether the issuer is trusted, the
 * credential unexpired or unrevoked, is the verifier's to say. Never throws.
 */
export async function checkCredential(input: unknown): Promise<CredentialCheck> {
  const parsed = credentialDocumentSchema.safeParse(input);
  if (!parsed.success)
    return {
      ok: false,
      problems: parsed.error.issues.map((i) => `${i.path.join('.') || 'document'}: ${i.message}`),
    };
  const doc = parsed.data;
  const problems: string[] = [];
  const keyId = issuerKeyId(doc.proof.publicKey);
  if (doc.issuer.id !== `urn:proof-exchange:issuer:${keyId}`)
    problems.push('issuer.id is not the urn of the key in proof.publicKey');
  if (doc.proof.verificationMethod !== `${doc.issuer.id}#key`)
    problems.push('proof.verificationMethod is not the issuer’s key');
  if (doc.credentialSchema.id !== `urn:proof-exchange:schema:${schemaId(doc.credentialSchema.schema)}`)
    problems.push('credentialSchema.id is not the id of its schema');
  if (
    doc.credentialStatus.id !==
    `urn:proof-exchange:revocation:${keyId}:${doc.credentialStatus.revocationNonce}`
  )
    problems.push('credentialStatus.id does not name this issuer and nonce');
  let claim: Claim;
  let hash: bigint;
  try {
    claim = claimOf(doc);
    hash = await claimHash(claim);
  } catch (err) {
    return { ok: false, problems: [...problems, (err as Error).message], keyId };
  }
  if (String(hash) !== doc.proof.claimHash)
    problems.push('proof.claimHash is not the Poseidon hash of the claim’s fields');
  const signed = eddsaVerify(hash, doc.proof.signature, doc.proof.publicKey);
  if (!signed) problems.push('the signature does not verify under proof.publicKey');
  return { ok: problems.length === 0, problems, claim, keyId };
}
