// The issuer's side, on the issuer's machine: a BabyJubjub key, credentials signed with it, and the
// revocation state it publishes (the revoked nonces, as a Poseidon sparse Merkle tree whose root a proof
// shows non-membership against). Needs nothing of the service running; docs/credentials.md.
import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../platform/canonical';
import { z } from 'zod';
import {
  CREDENTIAL_TYPE,
  PROOF_TYPE,
  SCHEMA_TYPE,
  STATUS_TYPE,
  VC_CONTEXT,
  claimHash,
  credentialSchemaSchema,
  eddsaPublicKey,
  eddsaSign,
  eddsaVerify,
  issuerKeyId,
  schemaId,
} from './format';
import type { Claim, CredentialDocument, CredentialSchema } from './format';
import { InMemoryDB, Merkletree, str2Bytes } from '@iden3/js-merkletree';
import { FIELD_PRIME, labelToField, poseidonHash, randomFieldElement } from '../platform/field';

export const ISSUER_KEY_TYPE = 'proof-exchange/issuer-key/v1';
export const REVOCATIONS_TYPE = 'proof-exchange/issuer-revocations/v1';
export const ISSUER_PUBLICATION_TYPE = 'proof-exchange/issuer/v1';

const decimal = z.string().regex(/^(0|[1-9]\d{0,76})$/);

/** The issuer's key file: its private key never leaves the issuer's machine. */
export const issuerKeyFileSchema = z
  .object({
    type: z.literal(ISSUER_KEY_TYPE),
    name: z.string().min(1).max(200),
    /** 32 random bytes, hex: an EdDSA private key as circomlibjs reads one. */
    privateKey: z.string().regex(/^[0-9a-f]{64}$/),
    publicKey: z.tuple([decimal, decimal]),
    keyId: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();
export type IssuerKeyFile = z.infer<typeof issuerKeyFileSchema>;

async function publicKeyOf(privateKey: Buffer): Promise<[string, string]> {
  return eddsaPublicKey(privateKey);
}

/** A new issuer key (32 random bytes) and its public point and id. */
export async function newIssuerKey(
  name: string,
  privateKey: Buffer = randomBytes(32),
): Promise<IssuerKeyFile> {
  const publicKey = await publicKeyOf(privateKey);
  return {
    type: ISSUER_KEY_TYPE,
    name,
    privateKey: privateKey.toString('hex'),
    publicKey,
    keyId: issuerKeyId(publicKey),
  };
}

/** Reads a key file, and refuses one whose public key or id is not its private key's. */
export async function readIssuerKey(input: unknown): Promise<IssuerKeyFile> {
  const key = issuerKeyFileSchema.parse(input);
  const publicKey = await publicKeyOf(Buffer.from(key.privateKey, 'hex'));
  if (publicKey.join() !== key.publicKey.join() || issuerKeyId(publicKey) !== key.keyId)
    throw new Error('the key file’s public key or id is not its private key’s');
  return key;
}

/**
 * Signs a claim: the Poseidon hash of its field encoding, signed with EdDSA-Poseidon, as a VC 2.0
 * document. `revocationNonce` defaults to a fresh random field element (what the issuer revokes by).
 */
export async function issueCredential(
  key: IssuerKeyFile,
  input: Omit<Claim, 'revocationNonce'> & { revocationNonce?: string },
): Promise<CredentialDocument> {
  const schema: CredentialSchema = credentialSchemaSchema.parse(input.schema);
  const claim: Claim = {
    ...input,
    schema,
    revocationNonce: input.revocationNonce ?? String(randomFieldElement()),
  };
  const hash = await claimHash(claim);
  const signature = eddsaSign(Buffer.from(key.privateKey, 'hex'), hash);
  const issuer = `urn:proof-exchange:issuer:${key.keyId}`;
  return {
    '@context': [VC_CONTEXT],
    type: ['VerifiableCredential', CREDENTIAL_TYPE],
    issuer: { id: issuer, name: key.name },
    validFrom: new Date(Date.parse(claim.validFrom)).toISOString(),
    validUntil: new Date(Date.parse(claim.validUntil)).toISOString(),
    credentialSchema: {
      id: `urn:proof-exchange:schema:${schemaId(schema)}`,
      type: 'ProofExchangeCredentialSchema2026',
      schema,
    },
    credentialSubject: { id: `urn:proof-exchange:subject:${claim.subject}`, ...claim.fields },
    credentialStatus: {
      id: `urn:proof-exchange:revocation:${key.keyId}:${claim.revocationNonce}`,
      type: STATUS_TYPE,
      revocationNonce: claim.revocationNonce,
    },
    proof: {
      type: PROOF_TYPE,
      verificationMethod: `${issuer}#key`,
      proofPurpose: 'assertionMethod',
      publicKey: key.publicKey,
      claimHash: String(hash),
      signature,
    },
  };
}

/**
 * The sparse Merkle tree of revoked nonces (iden3's, whose nodes are circomlib's: a leaf
 * Poseidon(key, value, 1), a branch Poseidon(left, right), the path the key's bits from the lowest;
 * circomlib's SMTVerifier checks paths in it): key the nonce, value 1. Nonces are taken modulo the
 * prime, as a circuit takes them.
 */
export async function revocationTree(nonces: readonly string[]): Promise<Merkletree> {
  const tree = new Merkletree(new InMemoryDB(str2Bytes('')), true, 254);
  for (const nonce of nonces) await tree.add(BigInt(nonce) % FIELD_PRIME, 1n);
  return tree;
}

/** The issuer's revocations: the nonces it revoked, and when, kept beside its key. */
export const revocationsSchema = z
  .object({
    type: z.literal(REVOCATIONS_TYPE),
    keyId: z.string().regex(/^[0-9a-f]{64}$/),
    revoked: z.array(z.object({ nonce: decimal, at: z.iso.datetime() }).strict()).max(1_000_000),
  })
  .strict();
export type Revocations = z.infer<typeof revocationsSchema>;

export const emptyRevocations = (keyId: string): Revocations => ({
  type: REVOCATIONS_TYPE,
  keyId,
  revoked: [],
});

/** Adds a nonce (once); the state as it is then. */
export function revoke(state: Revocations, nonce: string, at: Date): Revocations {
  if (!decimal.safeParse(nonce).success) throw new Error('a revocation nonce is a decimal field element');
  if (state.revoked.some((r) => r.nonce === nonce)) return state;
  return { ...state, revoked: [...state.revoked, { nonce, at: at.toISOString() }] };
}

/**
 * The root of the revoked nonces' sparse Merkle tree (circomlibjs's Poseidon SMT, circomlib's
 * SMTVerifier in a circuit: key the nonce, value 1), decimal; "0" for none.
 */
export async function revocationRoot(state: Revocations): Promise<string> {
  const tree = await revocationTree(state.revoked.map((r) => r.nonce));
  return String((await tree.root()).bigInt());
}

/** What an issuer publishes, signed by its key (docs/credentials.md, "What an issuer publishes"). */
export const issuerPublicationSchema = z
  .object({
    type: z.literal(ISSUER_PUBLICATION_TYPE),
    name: z.string().min(1).max(200),
    keyId: z.string().regex(/^[0-9a-f]{64}$/),
    publicKey: z.tuple([decimal, decimal]),
    schemas: z
      .array(
        z
          .object({
            id: decimal,
            name: z.string(),
            version: z.number().int(),
            fields: credentialSchemaSchema.shape.fields,
          })
          .strict(),
      )
      .max(32),
    revocation: z
      .object({
        root: decimal,
        revoked: z.number().int().nonnegative(),
        at: z.iso.datetime(),
        nonces: z.array(decimal).max(1_000_000),
      })
      .strict(),
    signature: z.object({ R8: z.tuple([decimal, decimal]), S: decimal }).strict(),
  })
  .strict();
export type IssuerPublication = z.infer<typeof issuerPublicationSchema>;

/** The message an issuer signs: Poseidon(tag, sha256 of the publication without its signature, >> 8). */
async function publicationMessage(unsigned: Omit<IssuerPublication, 'signature'>): Promise<bigint> {
  const digest =
    BigInt(`0x${createHash('sha256').update(canonicalJson(unsigned), 'utf8').digest('hex')}`) >> 8n;
  return poseidonHash([labelToField('px.issuer.publication.v1'), digest]);
}

/**
 * What an issuer publishes, signed with its key: its key, the schemas it signs, its revoked nonces and
 * their tree's root as of `at` (a prover needs the nonces to show its own is not among them).
 */
export async function issuerPublication(
  key: IssuerKeyFile,
  state: Revocations,
  schemas: readonly CredentialSchema[],
  at: Date,
): Promise<IssuerPublication> {
  if (state.keyId !== key.keyId) throw new Error('the revocations are another key’s');
  const unsigned = {
    type: ISSUER_PUBLICATION_TYPE,
    name: key.name,
    keyId: key.keyId,
    publicKey: key.publicKey,
    schemas: schemas.map((s) => ({ id: schemaId(s), name: s.name, version: s.version, fields: s.fields })),
    revocation: {
      root: await revocationRoot(state),
      revoked: state.revoked.length,
      at: at.toISOString(),
      nonces: state.revoked.map((r) => r.nonce),
    },
  } as const;
  return {
    ...unsigned,
    schemas: [...unsigned.schemas],
    signature: eddsaSign(Buffer.from(key.privateKey, 'hex'), await publicationMessage(unsigned)),
  };
}

/** A publication's problems: its shape, its key id, its schemas' ids, its root and its signature. */
export async function checkPublication(
  input: unknown,
): Promise<{ problems: string[]; publication?: IssuerPublication; schemas: CredentialSchema[] }> {
  const parsed = issuerPublicationSchema.safeParse(input);
  if (!parsed.success)
    return {
      problems: parsed.error.issues
        .slice(0, 5)
        .map((i) => `${i.path.join('.') || 'publication'}: ${i.message}`),
      schemas: [],
    };
  const pub = parsed.data;
  const problems: string[] = [];
  if (issuerKeyId(pub.publicKey) !== pub.keyId) problems.push('keyId is not the id of publicKey');
  const schemas: CredentialSchema[] = [];
  for (const [i, s] of pub.schemas.entries()) {
    const schema = credentialSchemaSchema.safeParse({
      type: SCHEMA_TYPE,
      name: s.name,
      version: s.version,
      fields: s.fields,
    });
    if (!schema.success || schemaId(schema.data) !== s.id)
      problems.push(`schemas.${i}: its id is not its schema's`);
    else schemas.push(schema.data);
  }
  if (pub.revocation.nonces.length !== pub.revocation.revoked)
    problems.push('revocation.revoked is not the number of nonces');
  if (new Set(pub.revocation.nonces).size !== pub.revocation.nonces.length)
    problems.push('revocation.nonces repeat');
  const { signature, ...unsigned } = pub;
  const signed = eddsaVerify(await publicationMessage(unsigned), signature, pub.publicKey);
  if (!signed) problems.push('the signature does not verify under publicKey');
  return { problems, publication: pub, schemas };
}
