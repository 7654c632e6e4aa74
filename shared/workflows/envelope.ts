// The part of a proof package every kind shares (workflow, governance, treasury, auction): the
// service's signature over the canonical body, and the transparency-log inclusion proof added after.
import { z } from 'zod';
import { canonicalJson } from '../canonical';
import { fromHex, verifyInclusion } from '../translog/merkle';
import { keyIdOf, verifyEd25519 } from '../crypto';
import type { Signer } from '../crypto';
import {
  hashHex,
  inclusionProofSchema,
  leafHashHex,
  signedTreeHeadSchema,
  verifyTreeHead,
} from '../translog/treeHead';
import type { InclusionProof, SignedTreeHead } from '../translog/treeHead';

export const packageKinds = ['workflow', 'governance', 'treasury', 'auction'] as const;
export type PackageKind = (typeof packageKinds)[number];
export const PACKAGE_VERSION = 1;

export const issuerSchema = z
  .object({ alg: z.literal('ed25519'), keyId: z.string().regex(/^[0-9a-f]{16}$/) })
  .strict();

export const logProofSchema = z
  .object({ inclusion: inclusionProofSchema, treeHead: signedTreeHeadSchema })
  .strict();
export type LogProof = z.infer<typeof logProofSchema>;

/** The members every package has, whatever its kind; kinds add their own public members. */
export const envelopeShape = {
  version: z.literal(PACKAGE_VERSION),
  kind: z.enum(packageKinds),
  proofId: z.string().min(1).max(100),
  issuedAt: z.iso.datetime(),
  issuer: issuerSchema,
  signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature, base64url'),
  log: logProofSchema.optional(),
};

export interface Envelope {
  version: typeof PACKAGE_VERSION;
  kind: PackageKind;
  proofId: string;
  issuedAt: string;
  issuer: { alg: 'ed25519'; keyId: string };
  signature: string;
  log?: LogProof;
}

type Unsigned<P extends Envelope> = Omit<P, 'issuer' | 'signature' | 'log'>;

/** The bytes the service signs: every member but the signature and the (later) log proof. */
export function packageSigningMessage(
  pkg: Omit<Envelope, 'signature' | 'log'> & Record<string, unknown>,
): string {
  const { signature: _s, log: _l, ...body } = pkg as Record<string, unknown>;
  return `proof-exchange/package/v1\n${canonicalJson(body)}`;
}

export function signPackage<P extends Envelope>(body: Unsigned<P>, key: Signer): P {
  const withIssuer = { ...body, issuer: { alg: 'ed25519' as const, keyId: key.keyId } };
  return { ...withIssuer, signature: key.sign(packageSigningMessage(withIssuer)) } as unknown as P;
}

/** What the log stores for a package: the canonical signed package without its log proof. */
export function packageLeafData(pkg: Envelope): Buffer {
  const { log: _l, ...signed } = pkg;
  return Buffer.from(canonicalJson(signed), 'utf8');
}

export const packageLeafHash = (pkg: Envelope): string => leafHashHex(packageLeafData(pkg));

export function attachLogProof<P extends Envelope>(
  pkg: P,
  proof: { leafIndex: number; treeSize: number; path: readonly string[]; treeHead: SignedTreeHead },
): P {
  const inclusion: InclusionProof = {
    leafIndex: proof.leafIndex,
    treeSize: proof.treeSize,
    leafHash: packageLeafHash(pkg),
    path: [...proof.path],
  };
  return { ...pkg, log: { inclusion, treeHead: proof.treeHead } };
}

export type CheckName =
  | 'format'
  | 'existed'
  | 'completed'
  | 'approvalsMet'
  | 'sequenceRespected'
  | 'notAltered'
  | 'signatureValid'
  | 'inclusionValid';

export interface Reason {
  check: CheckName;
  code: string;
  detail: string;
  stage?: string;
}

export interface EnvelopeCheck {
  signatureValid: boolean;
  inclusionValid?: boolean;
  reasons: Reason[];
}

/** Checks the signature and, when present, the log inclusion proof and its signed tree head. Never throws. */
export function checkEnvelope(
  pkg: Envelope,
  keys: { publicKey: string; logPublicKey?: string },
): EnvelopeCheck {
  const reasons: Reason[] = [];
  let signatureValid = false;
  if (pkg.issuer.keyId !== keyIdOf(keys.publicKey)) {
    reasons.push({
      check: 'signatureValid',
      code: 'unknown_key',
      detail: 'The package names a key other than the one given.',
    });
  } else if (!verifyEd25519(keys.publicKey, packageSigningMessage(pkg as never), pkg.signature)) {
    reasons.push({
      check: 'signatureValid',
      code: 'bad_signature',
      detail: 'The signature does not match the package.',
    });
  } else {
    signatureValid = true;
  }
  if (!pkg.log) return { signatureValid, reasons };

  const { inclusion, treeHead } = pkg.log;
  const fail = (code: string, detail: string): EnvelopeCheck => ({
    signatureValid,
    inclusionValid: false,
    reasons: [...reasons, { check: 'inclusionValid', code, detail }],
  });
  if (!verifyTreeHead(treeHead, keys.logPublicKey ?? keys.publicKey)) {
    return fail('bad_tree_head', 'The signed tree head does not verify.');
  }
  if (inclusion.leafHash !== packageLeafHash(pkg)) {
    return fail('leaf_mismatch', 'The log entry is for different contents than this package.');
  }
  if (inclusion.treeSize !== treeHead.treeSize) {
    return fail('tree_size_mismatch', 'The inclusion proof is for another tree size than the tree head.');
  }
  const ok =
    hashHex.safeParse(treeHead.rootHash).success &&
    verifyInclusion(
      fromHex(inclusion.leafHash),
      inclusion.leafIndex,
      inclusion.treeSize,
      inclusion.path.map(fromHex),
      fromHex(treeHead.rootHash),
    );
  if (!ok) return fail('bad_inclusion_proof', 'The inclusion proof does not lead to the signed root.');
  return { signatureValid, inclusionValid: true, reasons };
}
