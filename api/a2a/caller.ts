// The caller of one A2A request (the SDK's User): its principal, its HTTP request (for links) and its
// lifetime; and the task ids it names, each the id of a job it must be able to open.
import { RequestMalformedError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Request } from 'express';
import { getJobFor } from '../../shared/jobs/access';
import type { JobAccess } from '../../shared/jobs/access';
import { jobIdSchema } from '../../shared/jobs/jobs';
import type { JobRow } from '../../shared/jobs/jobs';
import type { AppDeps } from '../deps';
import { jobAccess } from '../http/auth';
import type { Principal } from '../http/auth';
import { origin } from '../http/links';
import { callerKey } from '../http/ratelimit';

export class A2ACaller implements User {
  constructor(
    readonly principal: Principal,
    readonly req: Request,
    /** Aborts when the client goes away: waits and streams stop there. */
    readonly signal: AbortSignal,
  ) {}
  get isAuthenticated(): boolean {
    return this.principal.kind !== 'anonymous';
  }
  /** Whose message ids are whose: the principal, else the client's address. */
  get userName(): string {
    return callerKey(this.principal, this.req);
  }
  /** What this caller brings to a task's job: its principal and its Bearer token (maybe a capability). */
  get access(): JobAccess {
    return jobAccess(this.req, this.principal);
  }
}

export function callerOf(context: ServerCallContext): A2ACaller {
  if (!(context.user instanceof A2ACaller)) throw new Error('A2A call without a caller');
  return context.user;
}

/** The A2A task id of a job, or not found: no other id can name a task here. */
export function jobIdOf(id: string): string {
  if (!id || !id.trim()) throw new RequestMalformedError('A task id is required.');
  if (!jobIdSchema.safeParse(id).success) throw new TaskNotFoundError(`Task not found: ${id.slice(0, 64)}`);
  return id;
}

/** The task's job, for a caller who may open it (else the task is not found). */
export function ownJob(deps: AppDeps, taskId: string, caller: A2ACaller): Promise<JobRow> {
  return getJobFor(deps.db, jobIdOf(taskId), caller.access);
}

/** The exchange's public address as this caller reaches it, for the links of its tasks. */
export const baseOf = (deps: AppDeps, caller: A2ACaller): string => origin(caller.req, deps, 'base');

/** A job's address (jobStatus), the link a push config's deliveries carry. */
export const jobUrlOf = (deps: AppDeps, jobId: string, caller: A2ACaller): string =>
  `${baseOf(deps, caller)}/api/jobs/${jobId}`;
