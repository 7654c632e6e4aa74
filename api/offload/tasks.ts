// What the web's verify pool runs in its threads (shared/platform/offload.ts): pure checks, by name, each
// given only data (a package, the trust root it is checked under) and answering only data.
import { BALLOT_CIRCUIT } from '../../shared/governance/ballot-protocol';
import { verifyGovernancePackage } from '../../shared/governance/package-verify';
import type { Trust } from '../../shared/platform/trust';
import type { OffloadTask } from '../../shared/platform/offload';
import { loadVerificationKey } from '../../shared/zk/verify';

export const offloadTasks = {
  /** A governance package's every check: trustees' dealings and joint key, ballots, openings, tally. */
  'governance.verify': async (input: {
    pkg: unknown;
    keys: Exclude<Trust, string> & { loggedAt?: string };
  }) =>
    verifyGovernancePackage(input.pkg, {
      ...input.keys,
      ballotVerificationKey: await loadVerificationKey(BALLOT_CIRCUIT),
    }),
} as const;

export type OffloadTaskName = keyof typeof offloadTasks;

export default async function run({ task, input }: OffloadTask): Promise<unknown> {
  const fn = offloadTasks[task as OffloadTaskName];
  if (!fn) throw new Error(`no such verify-pool task: ${task}`);
  return fn(input as never);
}
