// Offline bundles (proof-exchange/bundle/v1): one file holding a published package and a C2SP tlog
// proof whose `extra` is the package's log entry, checked with nothing but a pinned trust root — the
// log's key signed the checkpoint, the policy's witnesses cosigned it, the entry is in the tree, the
// entry names this package, and the package's own signature and contents hold. Pure and offline: the
// checks of each package kind are passed in.
import { z } from 'zod';
import { canonicalJson } from '../canonical';
import { sha256Hex } from '../crypto';
import { keyFor } from '../trust';
import type { TrustRoot } from '../trust';
import type { SignedCheckpoint } from './checkpoint';
import { leafHash, verifyInclusion } from './merkle';
import { checkCheckpoint, parsePolicy } from './policy';
import type { Policy } from './policy';
import { parseTlogProof } from './proof';
import { parseLogEntry } from './entry';

export const BUNDLE_FORMAT = 'proof-exchange/bundle/v1';

/** The log entry kinds a bundle can carry: packages. */
export const bundleKinds = [
  'workflow_package',
  'governance_package',
  'auction_package',
  'treasury_package',
] as const;
export type BundleKind = (typeof bundleKinds)[number];

export const bundleSchema = z
  .object({
    format: z.literal(BUNDLE_FORMAT),
    kind: z.enum(bundleKinds),
    /** The signed package without its `log` member: the proof below replaces it. */
    package: z.record(z.string(), z.unknown()),
    /** c2sp.org/tlog-proof@v1; its `extra` is base64 of the log entry. */
    proof: z
      .string()
      .min(1)
      .max(16 * 1024 * 1024),
    /**
     * The Groth16 verification keys (snarkjs JSON, as `/circuits/<circuit>.vkey.json` serves them) of
     * the circuits the package's proofs are of, by circuit: `snarkjs groth16 verify` takes them as
     * they are. A verifier checks them against the keys it holds. Absent for packages with no proof.
     */
    verificationKeys: z
      .record(z.string().regex(/^[a-z][a-z0-9_]{0,31}$/), z.record(z.string(), z.unknown()))
      .optional(),
    /**
     * c2sp.org/tlog-proof@v1 proofs of the log statements the package rests on (a credential proof's
     * issuer acceptance and revocation root), each against a checkpoint of the same log.
     */
    statements: z
      .array(
        z
          .string()
          .min(1)
          .max(1024 * 1024),
      )
      .max(64)
      .optional(),
  })
  .strict()
  .meta({ id: 'Bundle', description: 'A published package with its C2SP tlog proof, checkable offline.' });
export type Bundle = z.infer<typeof bundleSchema>;

/** What a package kind's own verifier says of a package, checked with one public key. */
export interface PackageFinding {
  valid: boolean;
  /** One line on what the package shows (facts, outcome, tally). */
  summary: string;
  /** Why it is not valid, one reason a line. */
  reasons: string[];
  /**
   * Whether what it shows rests on zero-knowledge proofs (anonymous ballots, proven approvals): facts
   * sound under a published ceremony's keys, forgeable under a development setup's.
   */
  restsOnProofs?: boolean;
  /** What holds but must be said beside the verdict (approvals asserted, not proven), one a line. */
  warnings?: string[];
  /** Log statements the package rests on: the bundle must prove each is in the log. */
  statements?: Array<{ kind: string; id: string; sha256: string; what: string }>;
}

/** A package kind's offline verifier: the package's signature under `publicKey`, and its contents. */
export type PackageChecker = (pkg: unknown, keys: { publicKey: string }) => Promise<PackageFinding>;
export type PackageCheckers = Record<BundleKind, PackageChecker>;

export interface Finding {
  ok: boolean;
  text: string;
}

export interface BundleVerdict {
  ok: boolean;
  findings: Finding[];
  /** The package's checker says its facts rest on zero-knowledge proofs (PackageFinding.restsOnProofs). */
  restsOnProofs: boolean;
  /** The package checker's warnings: they do not change `ok`. */
  warnings: string[];
}

/** The published document: the signed package without its log proof, as canonical JSON. */
export function publishedBytes(pkg: Record<string, unknown>): Buffer {
  const { log: _log, ...signed } = pkg;
  return Buffer.from(canonicalJson(signed), 'utf8');
}

const earliest = (times: Iterable<number>): number | null => {
  let min: number | null = null;
  for (const t of times) if (min === null || t < min) min = t;
  return min;
};

/**
 * Checks a bundle against a trust root, every step that can be taken, each as a finding. Never throws:
 * whatever the input, it is a list of what held and what did not.
 */
/** The verification key a verifier holds for a circuit (its committed one), to check a bundle's against. */
export type HeldVerificationKey = (circuit: string) => Promise<unknown>;

export async function verifyBundle(
  input: unknown,
  root: TrustRoot,
  checkers: PackageCheckers,
  heldKey?: HeldVerificationKey,
): Promise<BundleVerdict> {
  const findings: Finding[] = [];
  const valid = (text: string) => findings.push({ ok: true, text });
  const invalid = (text: string): BundleVerdict => {
    findings.push({ ok: false, text });
    return { ok: false, findings, restsOnProofs: false, warnings: [] };
  };

  const parsedBundle = bundleSchema.safeParse(input);
  if (!parsedBundle.success) {
    const issue = parsedBundle.error.issues[0];
    return invalid(
      `not a ${BUNDLE_FORMAT} bundle (${issue ? `${issue.path.join('.') || 'document'}: ${issue.message}` : 'malformed'})`,
    );
  }
  const bundle = parsedBundle.data;
  let proof: ReturnType<typeof parseTlogProof>;
  try {
    proof = parseTlogProof(bundle.proof);
  } catch (err) {
    return invalid(`the proof is not a c2sp.org/tlog-proof@v1 proof: ${(err as Error).message}`);
  }
  const cp: SignedCheckpoint = proof.parsed;

  // 1. The log: the trusted origin, signed by one of the log keys the trust root's policy lists (the
  // current one and any earlier one not revoked: a checkpoint outlives a rotation of the log key).
  if (cp.origin !== root.log.origin)
    return invalid(
      `the checkpoint is of another log: origin ${cp.origin}, the trust root's is ${root.log.origin}`,
    );
  let policy: Policy;
  try {
    policy = parsePolicy(root.policy);
  } catch (err) {
    return invalid(`the trust root's policy does not parse: ${(err as Error).message}`);
  }
  const verdict = checkCheckpoint(policy, cp);
  if (!verdict.log) return invalid(`the checkpoint is not signed by a log key of the trust root`);
  valid(
    `checkpoint of ${cp.origin} at size ${cp.size}, signed by the log key ${verdict.log.name}+${verdict.log.keyId.toString(16).padStart(8, '0')}`,
  );

  // 2. The witnesses: the policy's quorum cosigned this checkpoint.
  if (!verdict.ok) return invalid(`witness policy: ${verdict.reason ?? 'not satisfied'}`);
  const names = [...verdict.cosigned].map(([n, t]) => `${n} at ${new Date(t * 1000).toISOString()}`);
  valid(
    `witness quorum ${policy.quorum} met${names.length ? `: cosigned by ${names.join(', ')}` : ' (the policy requires no cosignature)'}`,
  );
  const first = earliest(verdict.cosigned.values());
  const loggedAt: Date | null = first === null ? null : new Date(first * 1000);

  // 3. The entry is in the tree the checkpoint commits to.
  if (!proof.extra) return invalid('the proof carries no entry (no extra line)');
  const entry = proof.extra;
  if (proof.index >= cp.size)
    return invalid(`entry ${proof.index} is beyond the checkpoint's size ${cp.size}`);
  if (!verifyInclusion(leafHash(entry), proof.index, cp.size, proof.path, cp.root))
    return invalid(`the inclusion proof of entry ${proof.index} does not lead to the checkpoint's root`);
  valid(`entry ${proof.index} is included in the checkpoint (root ${cp.root.toString('base64')})`);

  // 4. The entry is this package's.
  const pkg = bundle.package;
  const published = publishedBytes(pkg);
  const proofId = typeof pkg.proofId === 'string' ? pkg.proofId : '';
  if (`${String(pkg.kind)}_package` !== bundle.kind)
    return invalid(`the bundle says ${bundle.kind}, the package is of kind ${String(pkg.kind)}`);
  const statement = parseLogEntry(entry);
  if (statement) {
    if (statement.kind !== bundle.kind)
      return invalid(`the entry is a ${statement.kind}, not a ${bundle.kind}`);
    if (statement.id !== proofId)
      return invalid(`the entry names ${statement.id}, the package is ${proofId || 'unnamed'}`);
    const digest = sha256Hex(published);
    if (statement.sha256 !== digest)
      return invalid(
        `the entry names sha256 ${statement.sha256}; the package hashes to ${digest} (it was changed)`,
      );
    valid(`the entry names ${statement.kind} ${statement.id} with the package's sha256 ${digest}`);
  } else if (published.equals(entry)) {
    valid(`the entry is the package itself (a leaf logged before log entries named packages by hash)`);
  } else {
    return invalid('the entry is neither a statement naming this package nor the package (it was changed)');
  }

  // 5. The package's own signature (a key of the trust root, valid then) and contents.
  const issuer = pkg.issuer as { keyId?: unknown } | undefined;
  const keyId = typeof issuer?.keyId === 'string' ? issuer.keyId : '';
  const issuedAt = typeof pkg.issuedAt === 'string' ? pkg.issuedAt : '';
  const key = keyFor(root, keyId, 'package', issuedAt, loggedAt ?? undefined);
  if (!key.ok)
    return invalid(
      `package signature: ${key.detail.replace(/\.$/, '')}${
        key.reason === 'revoked' && loggedAt
          ? `; the earliest cosignature shows it logged at ${loggedAt.toISOString()}`
          : ''
      }`,
    );
  const { log: _log, ...signed } = pkg;
  let finding: PackageFinding;
  try {
    finding = await checkers[bundle.kind](signed, { publicKey: key.key.publicKey });
  } catch (err) {
    return invalid(`the package could not be checked: ${(err as Error).message}`);
  }
  if (!finding.valid) {
    findings.push({ ok: false, text: `package: ${finding.summary}` });
    for (const r of finding.reasons) findings.push({ ok: false, text: r });
    return {
      ok: false,
      findings,
      restsOnProofs: finding.restsOnProofs ?? false,
      warnings: finding.warnings ?? [],
    };
  }
  valid(`package ${proofId} signed by key ${keyId} (valid from ${key.key.validFrom}) at ${issuedAt}`);
  valid(`package: ${finding.summary}`);
  // The statements it rests on, each in the same log under a checkpoint the policy accepts.
  const carried = (bundle.statements ?? []).flatMap((text) => {
    try {
      return [parseTlogProof(text)];
    } catch {
      return [];
    }
  });
  for (const needed of finding.statements ?? []) {
    const found = carried.find((p) => {
      const e = p.extra ? parseLogEntry(p.extra) : null;
      return e?.kind === needed.kind && e.id === needed.id && e.sha256 === needed.sha256;
    });
    if (!found) return invalid(`the bundle does not prove that the log holds ${needed.what}`);
    const at = found.parsed;
    const ok =
      at.origin === root.log.origin &&
      checkCheckpoint(policy, at).ok &&
      found.index < at.size &&
      verifyInclusion(leafHash(found.extra!), found.index, at.size, found.path, at.root);
    if (!ok) return invalid(`the log proof of ${needed.what} does not hold`);
    valid(`${needed.what} is in the log (entry ${found.index}, checkpoint size ${at.size})`);
  }
  // The keys carried for standard tools: each must be the one this verifier checked the proofs with.
  for (const [circuit, carried] of Object.entries(bundle.verificationKeys ?? {})) {
    const held = heldKey ? await heldKey(circuit).catch(() => undefined) : undefined;
    const digest = sha256Hex(canonicalJson(carried));
    if (held === undefined)
      return invalid(
        `the bundle carries a verification key of ${circuit}, a circuit this verifier holds no key of`,
      );
    if (sha256Hex(canonicalJson(held)) !== digest)
      return invalid(
        `the bundle's verification key of ${circuit} (sha256 ${digest}) is not the one this verifier holds: a proof checked with it proves nothing`,
      );
    valid(
      `the bundle's verification key of ${circuit} is the one this verifier holds (canonical sha256 ${digest})`,
    );
  }
  return {
    ok: true,
    findings,
    restsOnProofs: finding.restsOnProofs ?? false,
    warnings: finding.warnings ?? [],
  };
}
