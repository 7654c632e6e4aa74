// Who may read or act on a job: the operator, the agent or license whose key created it, or whoever
// presents one of the job's capabilities (jt_…, returned once: to its creator, and to the request that
// settled an x402 payment of it). A job id alone opens nothing. Anyone else is told the job was not
// found, exactly as for a job that does not exist, so an id is not even an oracle of existence.
// Every route and A2A operation on a job asks here: jobStatus, its events, submitPayment, cancelling,
// push notification configs, logistics.
import { capabilityHash, capabilityMatches, capabilityPrefixes } from '../platform/capabilities';
import type { Db } from '../platform/db/knex';
import { notFound } from '../platform/errors';
import type { JobRow } from './jobs';

/** The caller's principal, as the API's resolver names it (the parts that matter to a job). */
export type JobCaller =
  | { kind: 'anonymous' }
  | { kind: 'operator' }
  | { kind: 'agent'; agentId: string }
  | { kind: 'license'; licenseId: string };

/** Who asks, and the Bearer token they sent (checked against the job's capabilities). */
export interface JobAccess {
  caller: JobCaller;
  token: string | undefined;
}

type Guarded = Pick<JobRow, 'agent_id' | 'license_id' | 'access_hash' | 'payer_access_hash'>;

/** Whether `access` opens the job (capabilities compared in constant time). */
export function mayAccessJob(row: Guarded, access: JobAccess): boolean {
  const { caller, token } = access;
  if (caller.kind === 'operator') return true;
  if (caller.kind === 'agent' && row.agent_id !== null && row.agent_id === caller.agentId) return true;
  if (caller.kind === 'license' && row.license_id !== null && row.license_id === caller.licenseId)
    return true;
  // Both are compared, whichever matches: the time taken says nothing about which one it was.
  const creator = capabilityMatches('job', token, row.access_hash);
  const payer = capabilityMatches('job', token, row.payer_access_hash);
  return creator || payer;
}

/**
 * mayAccessJob's arguments for a statement that decides it in the database (the submit_payment
 * function, migrations/20261206000100_submit_payment_function.ts): the caller's principal, and the
 * hash of a job capability (a token of any other kind opens nothing). Without `access` (a caller that
 * has already decided, as the x402 settlement does), the job is open.
 */
export function accessArgs(access: JobAccess | undefined): {
  p_operator: boolean;
  p_agent_id: string | null;
  p_license_id: string | null;
  p_token_hash: string | null;
} {
  const caller = access?.caller;
  const token = access?.token;
  return {
    p_operator: !access || caller?.kind === 'operator',
    p_agent_id: caller?.kind === 'agent' ? caller.agentId : null,
    p_license_id: caller?.kind === 'license' ? caller.licenseId : null,
    p_token_hash: token?.startsWith(capabilityPrefixes.job) ? capabilityHash(token) : null,
  };
}

/** The job if `access` opens it; otherwise the same 404 as for a job that does not exist. */
export function authorizeJob<R extends Guarded>(row: R | undefined, jobId: string, access: JobAccess): R {
  if (!row || !mayAccessJob(row, access)) throw notFound(`Job ${jobId}`);
  return row;
}

/** Reads a job for a caller (404 when it does not exist or the caller may not open it). */
export async function getJobFor(db: Db, jobId: string, access: JobAccess): Promise<JobRow> {
  const row = (await db('jobs').where({ id: jobId }).first()) as JobRow | undefined;
  return authorizeJob(row, jobId, access);
}
