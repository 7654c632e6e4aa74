// Builds a closed workflow's proof package and appends its log entry to the transparency log (with the
// checkpoint that covers it), all in one transaction under the log's lock: a crash leaves nothing
// behind, a retry finds the work done.
import type { Db } from '../platform/db/knex';
import { SigningKeyRetired } from '../platform/keys';
import { leafHashHex } from '../platform/translog/tree-head';
import { findLeaf, inclusionProofAt, lockLog } from '../platform/translog/pg-log';
import { appendEntries } from '../platform/translog/service-log';
import { loadApprovals, loadFixedApprovers } from './approvers';
import { loadCredentialProofs, restingFacts } from './credential-proofs';
import { attachLogProof, packageEntry } from '../proofs/envelope';
import type { WorkflowPackage } from './package';
import { sealWorkflowPackage } from './seal';
import { loadRecords, templateOrThrow } from './load';
import type { PackageRow, WorkflowRow } from './load';

/** The proofs-queue kind that builds and logs a workflow package. */
export const WORKFLOW_PACKAGE_KIND = 'workflow_package';

/** A package that can never be built (no row, records that do not recompute): retrying will not help. */
export class PackageRefused extends Error {}

export type PublishOutcome = { status: 'logged' | 'already_logged'; leafIndex: number; treeSize: number };

export async function publishWorkflowPackage(db: Db, proofId: string): Promise<PublishOutcome> {
  return db.transaction(async (trx) => {
    await lockLog(trx);
    const row = (await trx('proof_packages').where('id', proofId).forUpdate().first()) as
      PackageRow | undefined;
    if (!row) throw new PackageRefused(`no package row for ${proofId}`);
    if (row.status === 'logged' && row.package?.log) {
      return {
        status: 'already_logged',
        leafIndex: Number(row.leaf_index),
        treeSize: row.package.log.inclusion.treeSize,
      };
    }
    if (await findLeaf(trx, proofId))
      throw new PackageRefused(`the log holds a leaf for ${proofId} without its package`);
    const wf = (await trx('workflows').where('id', row.workflow_id).first()) as WorkflowRow;
    const template = templateOrThrow(wf.template);
    const stages = await loadRecords(trx, wf.id);
    // One after another: a transaction is one connection, which runs one query at a time (pg queues
    // concurrent ones, and pg 9 refuses them).
    const approvals = await loadApprovals(trx, wf.id);
    const approvers = await loadFixedApprovers(trx, wf.id);
    const credentialProofs = await loadCredentialProofs(trx, wf.id, template);
    let pkg: WorkflowPackage;
    try {
      pkg = sealWorkflowPackage({
        template,
        proofId,
        stages,
        issuedAt: new Date(),
        approvals,
        approvers,
        credentialProofs,
      });
    } catch (err) {
      // A key the history retired is this process's problem, not the records': the job retries.
      if (err instanceof SigningKeyRetired) throw err;
      throw new PackageRefused((err as Error).message);
    }
    const entry = packageEntry(pkg);
    const { start: index, treeSize, treeHead } = await appendEntries(trx, [{ key: proofId, entry }]);
    const inclusion = await inclusionProofAt(trx, index, treeSize);
    // Each credential proof's and credentialed approval's issuer and revocation-root statements, at
    // the package's tree head.
    const statements = await Promise.all(
      restingFacts({ credentialProofs, approvals })
        .flatMap((p) => [p.issuer.leafIndex, p.revocation.leafIndex])
        .map(async (leafIndex) => ({
          leafIndex,
          path: (await inclusionProofAt(trx, leafIndex, treeSize)).path,
        })),
    );
    pkg = attachLogProof(
      pkg,
      {
        leafIndex: index,
        treeSize,
        path: inclusion.path,
        treeHead,
        leafHash: leafHashHex(entry),
      },
      statements,
    );
    await trx('proof_packages')
      .where({ id: proofId })
      .whereIn('status', ['pending', 'failed'])
      .update({
        status: 'logged',
        package: JSON.stringify(pkg),
        leaf_index: index,
        error: null,
        updated_at: trx.fn.now(),
      });
    return { status: 'logged', leafIndex: index, treeSize };
  });
}

/** Marks a package row failed with a reason (the sweeper's and the processor's last word). */
export async function failPackage(db: Db, proofId: string, reason: string): Promise<boolean> {
  const n = await db('proof_packages')
    .where({ id: proofId, status: 'pending' })
    .update({ status: 'failed', error: reason.slice(0, 500), updated_at: db.fn.now() });
  return n > 0;
}
