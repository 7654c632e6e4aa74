// A published package as an offline bundle (proof-exchange/bundle/v1): the package without its log
// member, and the C2SP tlog proof of its log entry against the best-cosigned checkpoint. Every package
// kind (workflow, governance, treasury, auction) is bundled here; each line's route decides who may
// have its packages.
import type { Knex } from 'knex';
import { conflict, notFound } from '../platform/errors';
import { BUNDLE_FORMAT } from '../platform/translog/bundle';
import type { Bundle } from '../platform/translog/bundle';
import { logProofFor } from '../platform/translog/service-log';
import { leafKey } from '../platform/translog/entry';
import type { LogEntryKind } from '../platform/translog/entry';
import { CREDENTIAL_CIRCUIT } from '../credentials/query';
import { ANONYMITY_CIRCUIT, CREDENTIALED_APPROVAL_CIRCUIT } from '../zk/anonymity';
import { loadVerificationKey } from '../zk/verify';
import { packageEntryKind, packageLeafData } from './envelope';
import type { Envelope } from './envelope';

/**
 * The circuits a package's Groth16 proofs are of: the ballot circuit for a workflow's proven approvals
 * and a vote's anonymous ballots (membership proofs), none for the rest.
 */
function provenCircuits(pkg: Envelope): string[] {
  const p = pkg as Envelope & {
    approvals?: Array<{ credential?: unknown }>;
    ballots?: Array<{ proof?: unknown }>;
    credentialProofs?: unknown[];
  };
  if (pkg.kind === 'workflow')
    return [
      ...((p.approvals ?? []).some((a) => !a.credential) ? [ANONYMITY_CIRCUIT] : []),
      ...((p.approvals ?? []).some((a) => a.credential) ? [CREDENTIALED_APPROVAL_CIRCUIT] : []),
      ...((p.credentialProofs?.length ?? 0) > 0 ? [CREDENTIAL_CIRCUIT] : []),
    ];
  if (pkg.kind === 'governance' && (p.ballots ?? []).some((b) => b.proof !== undefined))
    return [ANONYMITY_CIRCUIT];
  return [];
}

/**
 * The log statements a package rests on beyond its own entry: two for each of a workflow's credential
 * proofs, then two for each credentialed approval.
 */
function statementsOf(pkg: Envelope): Array<{ kind: LogEntryKind; id: string }> {
  interface Facts {
    issuer: { statement: { owner: string; keyId: string; version: number } };
    revocation: { statement: { keyId: string; seq: number } };
  }
  const p = pkg as Envelope & { credentialProofs?: Facts[]; approvals?: Array<{ credential?: Facts }> };
  if (pkg.kind !== 'workflow') return [];
  const facts = [
    ...(p.credentialProofs ?? []),
    ...(p.approvals ?? []).flatMap((a) => (a.credential ? [a.credential] : [])),
  ];
  return facts.flatMap((c) => [
    {
      kind: 'credential_issuer' as const,
      id: `${c.issuer.statement.owner}:${c.issuer.statement.keyId}:${c.issuer.statement.version}`,
    },
    { kind: 'revocation_root' as const, id: `${c.revocation.statement.keyId}:${c.revocation.statement.seq}` },
  ]);
}

export async function bundleOf(db: Knex, pkg: Envelope): Promise<Bundle> {
  const { log: _log, ...signed } = pkg;
  // A leaf of the older format whose bytes the log does not hold was the package itself.
  const outcome = await logProofFor(db, pkg.proofId, () => packageLeafData(pkg));
  if (outcome.status === 'not_logged') throw notFound(`A logged package ${pkg.proofId}`);
  if (outcome.status === 'no_checkpoint')
    throw conflict('checkpoint_pending', 'The log has not signed a checkpoint covering this package yet.');
  const circuits = provenCircuits(pkg);
  const keys = await Promise.all(circuits.map(async (c) => [c, await loadVerificationKey(c)] as const));
  const statements = await Promise.all(
    statementsOf(pkg).map(async (s) => {
      const got = await logProofFor(db, leafKey(s.kind, s.id), () => {
        throw new Error(`the log holds no entry bytes for ${s.kind} ${s.id}`);
      });
      if (got.status !== 'proved')
        throw conflict(
          'checkpoint_pending',
          'The log has not signed a checkpoint covering what the package rests on yet.',
        );
      return got.proof;
    }),
  );
  return {
    format: BUNDLE_FORMAT,
    kind: packageEntryKind(pkg.kind) as Bundle['kind'],
    package: signed as Record<string, unknown>,
    proof: outcome.proof,
    ...(keys.length
      ? { verificationKeys: Object.fromEntries(keys) as NonNullable<Bundle['verificationKeys']> }
      : {}),
    ...(statements.length ? { statements } : {}),
  };
}
