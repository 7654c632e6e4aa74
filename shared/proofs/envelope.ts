// The part of a proof package every kind shares (workflow, governance, treasury, auction): the
// service's signature over the canonical body, and the transparency-log inclusion proof added after.
import { z } from 'zod';
import { canonicalJson } from '../platform/canonical';
import { entryFor } from '../platform/translog/entry';
import type { LogEntryKind } from '../platform/translog/entry';
import { fromHex, verifyInclusion } from '../platform/translog/merkle';
import type { Signer } from '../platform/crypto';
import { asTrust, keyFor, verifySignedBy } from '../platform/trust';
import type { KeyVerdict, Trust, TrustRoot } from '../platform/trust';
import {
  hashHex,
  inclusionProofSchema,
  leafHashHex,
  signedTreeHeadSchema,
  verifyTreeHead,
} from '../platform/translog/tree-head';
import type { InclusionProof, SignedTreeHead } from '../platform/translog/tree-head';

export const packageKinds = ['workflow', 'governance', 'treasury', 'auction'] as const;
export type PackageKind = (typeof packageKinds)[number];
export const PACKAGE_VERSION = 1;

export const issuerSchema = z
  .object({ alg: z.literal('ed25519'), keyId: z.string().regex(/^[0-9a-f]{16}$/) })
  .strict();

/** A statement the package rests on (an issuer's acceptance, a revocation root), in the same tree. */
export const statementInclusionSchema = z
  .object({
    leafIndex: z.number().int().nonnegative(),
    path: z.array(z.string().regex(/^[0-9a-f]{64}$/)).max(64),
  })
  .strict();

export const logProofSchema = z
  .object({
    inclusion: inclusionProofSchema,
    treeHead: signedTreeHeadSchema,
    /** The inclusion, at the same tree head, of log statements the package names (kinds say which). */
    statements: z.array(statementInclusionSchema).max(256).optional(),
  })
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

/** The canonical signed package without its log proof: the published document. */
export function packageLeafData(pkg: Envelope): Buffer {
  const { log: _l, ...signed } = pkg;
  return Buffer.from(canonicalJson(signed), 'utf8');
}

/** What leaves made before log entries held for a package: the package itself. */
export const packageLeafHash = (pkg: Envelope): string => leafHashHex(packageLeafData(pkg));

/** The log entry kind of a package kind. */
export const packageEntryKind = (kind: PackageKind): LogEntryKind => `${kind}_package`;

/**
 * What the log holds for a package (c2sp entry, proof-exchange/log-entry/v1): its kind, its proof id
 * and the sha256 of the published document.
 */
export const packageEntry = (pkg: Envelope): Buffer =>
  entryFor(packageEntryKind(pkg.kind), pkg.proofId, packageLeafData(pkg));

export const packageEntryLeafHash = (pkg: Envelope): string => leafHashHex(packageEntry(pkg));

export function attachLogProof<P extends Envelope>(
  pkg: P,
  proof: {
    leafIndex: number;
    treeSize: number;
    path: readonly string[];
    treeHead: SignedTreeHead;
    /** The leaf's hash, hex: of the package's log entry. */
    leafHash: string;
  },
  statements?: ReadonlyArray<{ leafIndex: number; path: readonly string[] }>,
): P {
  const inclusion: InclusionProof = {
    leafIndex: proof.leafIndex,
    treeSize: proof.treeSize,
    leafHash: proof.leafHash,
    path: [...proof.path],
  };
  return {
    ...pkg,
    log: {
      inclusion,
      treeHead: proof.treeHead,
      ...(statements?.length
        ? { statements: statements.map((st) => ({ leafIndex: st.leafIndex, path: [...st.path] })) }
        : {}),
    },
  };
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

/** The key a JSON tree head is checked with: a log key, else (the first log's) the package key. */
function treeHeadKey(
  root: Pick<TrustRoot, 'keys'>,
  head: SignedTreeHead,
  loggedAt: string | undefined,
): KeyVerdict {
  const asLog = keyFor(root, head.keyId, 'log', head.timestamp, loggedAt);
  if (asLog.ok || asLog.reason !== 'wrong_role') return asLog;
  return keyFor(root, head.keyId, 'package', head.timestamp, loggedAt);
}

/**
 * Checks the signature and, when present, the log inclusion proof and its signed tree head, each under
 * the key the trust root lists for its time: the package's key with role `package` at its issuedAt, the
 * tree head's with role `log` (or `package`: the JSON tree heads of the first log were signed by the
 * service key) at its timestamp. `loggedAt` is when the log is known to have recorded the package; only
 * it holds a signature against its key's revocation. Never throws.
 */
export function checkEnvelope(pkg: Envelope, trust: Trust, opts: { loggedAt?: string } = {}): EnvelopeCheck {
  const root = asTrust(trust);
  const reasons: Reason[] = [];
  let signatureValid = false;
  const signed = verifySignedBy(
    root,
    { keyId: pkg.issuer.keyId, role: 'package', signedAt: pkg.issuedAt, loggedAt: opts.loggedAt },
    packageSigningMessage(pkg as never),
    pkg.signature,
  );
  if (!signed.ok) {
    reasons.push({
      check: 'signatureValid',
      code: signed.reason,
      detail: signed.detail,
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
  const headKey = treeHeadKey(root, treeHead, opts.loggedAt);
  if (!headKey.ok) return fail(headKey.reason, `The signed tree head's key: ${headKey.detail}`);
  if (!verifyTreeHead(treeHead, headKey.key.publicKey)) {
    return fail('bad_tree_head', 'The signed tree head does not verify.');
  }
  // A leaf is the package's log entry, or (leaves made before entries) the package itself.
  if (inclusion.leafHash !== packageEntryLeafHash(pkg) && inclusion.leafHash !== packageLeafHash(pkg)) {
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
