// The `workflow_package` proof kind: builds a closed workflow's package and appends it to the log; the
// sweeper re-enqueues packages left pending (Redis was down at enqueue, or the job was lost).
import { UnrecoverableError } from 'bullmq';
import {
  PackageRefused,
  WORKFLOW_PACKAGE_KIND,
  failPackage,
  publishWorkflowPackage,
} from '../../shared/workflows/publish';
import type { ProofKind } from './kinds';

export const workflowPackageKind: ProofKind = {
  kind: WORKFLOW_PACKAGE_KIND,
  handle: async (proofId, ctx) => {
    try {
      return await publishWorkflowPackage(ctx.db, proofId);
    } catch (err) {
      if (err instanceof PackageRefused) {
        await failPackage(ctx.db, proofId, err.message);
        throw new UnrecoverableError(err.message);
      }
      throw err;
    }
  },
  sweep: {
    queue: 'proofs',
    table: 'proof_packages',
    statuses: ['pending'],
    payload: (row) => ({ proofId: row.id, kind: WORKFLOW_PACKAGE_KIND }),
    markFailed: (db, id, reason) => failPackage(db, id, reason),
  },
};
