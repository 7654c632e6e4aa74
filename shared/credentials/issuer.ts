// The issuer's side, on the issuer's machine: a BabyJubjub key, credentials signed with it, and the
// revocation state it publishes (the revoked nonces, as a Poseidon sparse Merkle tree whose root a proof
// shows non-membership against). Needs nothing of the service running; docs/credentials.md.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  CREDENTIAL_TYPE,
  PROOF_TYPE,
  STATUS_TYPE,
  VC_CONTEXT,
  claimHash,
  credentialSchemaSchema,
  getEddsa,
  issuerKeyId,
  schemaId,
} from './format';
import type { Claim, CredentialDocument, CredentialSchema } from './format';
import { randomFieldElement } from '../zk/field';

export const ISSUER_KEY_TYPE = 'proof-exchange/issuer-key/v1';
export const REVOCATIONS_TYPE = 'proof-exchange/issuer-revocations/v1';
export const ISSUER_PUBLICATION_TYPE = 'proof-exchange/issuer/v1';

const decimal = z.string().regex(/^(0|[1-9]\d{0,76})$/);

/** The issuer's key file: its private key never leaves the issuer's machine. */
export const issuerKeyFileSchema = z
  .object({
    type: z.literal(ISSUER_KEY_TYPE),
    name: z.string().min(1).max(200),
    /** 32 random bytes, hex: circomlibjs's EdDSA private key. */
    privateKey: z.string().regex(/^[0-9a-f]{64}$/),
    publicKey: z.tuple([decimal, decimal]),
    keyId: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();
export type IssuerKeyFile = z.infer<typeof issuerKeyFileSchema>;

async function publicKeyOf(privateKey: Buffer): Promise<[string, string]> {
  const e = await getEddsa();
  const [x, y] = e.prv2pub(privateKey);
  return [String(e.F.toObject(x)), String(e.F.toObject(y))];
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
  const e = await getEddsa();
  const sig = e.signPoseidon(Buffer.from(key.privateKey, 'hex'), e.F.e(hash));
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
      signature: {
        R8: [String(e.F.toObject(sig.R8[0])), String(e.F.toObject(sig.R8[1]))],
        S: String(sig.S),
      },
    },
  };
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
  const { newMemEmptyTrie } = await import('circomlibjs');
  const tree = await newMemEmptyTrie();
  for (const r of state.revoked) await tree.insert(BigInt(r.nonce), 1n);
  return String(tree.F.toObject(tree.root));
}

/** What an issuer publishes: its key, the schemas it signs, and its revocation root as of `at`. */
export async function issuerPublication(
  key: IssuerKeyFile,
  state: Revocations,
  schemas: readonly CredentialSchema[],
  at: Date,
) {
  if (state.keyId !== key.keyId) throw new Error('the revocations are another key’s');
  return {
    type: ISSUER_PUBLICATION_TYPE,
    name: key.name,
    keyId: key.keyId,
    publicKey: key.publicKey,
    schemas: schemas.map((s) => ({ id: schemaId(s), name: s.name, version: s.version })),
    revocation: { root: await revocationRoot(state), revoked: state.revoked.length, at: at.toISOString() },
  };
}
