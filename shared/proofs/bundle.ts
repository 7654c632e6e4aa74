// A published package as an offline bundle (proof-exchange/bundle/v1): the package without its log
// member, and the C2SP tlog proof of its log entry against the best-cosigned checkpoint. Every package
// kind (workflow, governance, treasury, auction) is bundled here; each line's route decides who may
// have its packages.
import type { Knex } from 'knex';
import { conflict, notFound } from '../platform/errors';
import { BUNDLE_FORMAT } from '../platform/translog/bundle';
import type { Bundle } from '../platform/translog/bundle';
import { logProofFor } from '../platform/translog/service-log';
import { ANONYMITY_CIRCUIT } from '../zk/anonymity';
import { loadVerificationKey } from '../zk/verify';
import { packageEntryKind, packageLeafData } from './envelope';
import type { Envelope } from './envelope';

/**
 * The circuits a package's Groth16 proofs are of: the ballot circuit for a workflow's proven approvals
 * and a vote's anonymous ballots (membership proofs), none for the rest.
 */
function provenCircuits(pkg: Envelope): string[] {
  const p = pkg as Envelope & { approvals?: unknown[]; ballots?: Array<{ proof?: unknown }> };
  if (pkg.kind === 'workflow' && (p.approvals?.length ?? 0) > 0) return [ANONYMITY_CIRCUIT];
  if (pkg.kind === 'governance' && (p.ballots ?? []).some((b) => b.proof !== undefined))
    return [ANONYMITY_CIRCUIT];
  return [];
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
  return {
    format: BUNDLE_FORMAT,
    kind: packageEntryKind(pkg.kind) as Bundle['kind'],
    package: signed as Record<string, unknown>,
    proof: outcome.proof,
    ...(keys.length
      ? { verificationKeys: Object.fromEntries(keys) as NonNullable<Bundle['verificationKeys']> }
      : {}),
  };
}
