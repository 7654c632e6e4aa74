// ListTasks: the caller's own tasks, the most recently updated first (A2A 1.0 §3.1.4: by the status
// timestamp, descending; ties by id, descending), in keyset pages whose token names the last task shown
// by its update time (in microseconds, as Postgres keeps it) and id (shared/platform/paging.ts), so a
// page never repeats a task nor skips one that did not change while the client paged. A task is a job: the tasks of a key are the jobs that key
// created, over A2A or over the HTTP API alike, and its conversations still waiting for a request or
// cancelled (./conversations.ts; a conversation that became a job is listed as that job, which has its
// id). Nothing else is listed to anyone: an anonymous caller, the bearer of one task's token and the
// operator own no list here.
import { TaskState } from '@a2a-js/sdk';
import type { Knex } from 'knex';
import type { Message } from '@a2a-js/sdk';
import type { JobCaller } from '../jobs/access';
import type { JobRow } from '../jobs/jobs';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { validationFailed } from '../platform/errors';
import { decodeListCursor, listPage } from '../platform/paging';
import type { ConversationRow } from './conversations';
import { ownedConversations } from './conversations';

export const DEFAULT_TASK_PAGE = 50;
export const MAX_TASK_PAGE = 100;
const LIST = 'a2a-tasks';
/** A timestamp column in whole microseconds (Postgres's own precision): exact keys for the pages. */
const US = (column: string) => `floor(extract(epoch from ${column}) * 1000000)::bigint`;

export interface TaskListQuery {
  contextId: string;
  status: TaskState;
  pageSize?: number | undefined;
  pageToken: string;
  historyLength?: number | undefined;
  statusTimestampAfter?: string | undefined;
}

/** A listed task: a job (with the history of the conversation it came from, if any), or a conversation. */
export type ListedTask =
  | { job: JobRow & { context_id: string; history: Message[] | null }; conversation?: undefined }
  | { conversation: ConversationRow; job?: undefined };

export interface TaskListPage {
  rows: ListedTask[];
  nextPageToken: string;
  totalSize: number;
}

const bad = (path: string, message: string) =>
  validationFailed([{ path: `params.${path}`, message }], `ListTasks: ${path} ${message}.`);

/** The query checked: a page size of 1 to 100, a known state, a timestamp that is one, a token of this list. */
function checked(query: TaskListQuery): {
  limit: number;
  after: { us: string; id: string } | undefined;
  since: Date | undefined;
  status: TaskState | undefined;
} {
  const { pageSize, historyLength, statusTimestampAfter, status } = query;
  if (pageSize !== undefined && (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_TASK_PAGE)) {
    throw bad('pageSize', `must be a whole number from 1 to ${MAX_TASK_PAGE}`);
  }
  if (historyLength !== undefined && (!Number.isInteger(historyLength) || historyLength < 0)) {
    throw bad('historyLength', 'must be a whole number, 0 or more');
  }
  let since: Date | undefined;
  if (statusTimestampAfter !== undefined) {
    since = new Date(statusTimestampAfter);
    if (!/^\d{4}-\d\d-\d\dT/.test(statusTimestampAfter) || Number.isNaN(since.getTime())) {
      throw bad('statusTimestampAfter', 'must be an RFC 3339 timestamp');
    }
  }
  if (!Object.values(TaskState).includes(status) || (status as number) < 0) {
    throw bad('status', 'must be a TaskState');
  }
  let after: { us: string; id: string } | undefined;
  try {
    const key = decodeListCursor(query.pageToken || undefined, LIST);
    if (key !== undefined) {
      const m = /^(\d{1,18})_(job_[0-9a-z]{26})$/.exec(key);
      if (!m) throw new Error('not a key of this list');
      after = { us: m[1]!, id: m[2]! };
    }
  } catch {
    throw bad('pageToken', 'is not one this list returned; start again without it');
  }
  return {
    limit: pageSize ?? DEFAULT_TASK_PAGE,
    after,
    since,
    status: status === TaskState.TASK_STATE_UNSPECIFIED ? undefined : status,
  };
}

/** The jobs in a task state, as ./tasks.ts taskStateOf maps them (an expired quote still watched waits). */
function inState(q: Knex.QueryBuilder, state: TaskState, now: number): void {
  const watchedAfter = new Date(now - env.QUOTE_LATE_WINDOW_SECONDS * 1000);
  const watched = (b: Knex.QueryBuilder) =>
    b
      .where('jobs.status', 'expired')
      .whereNotNull('jobs.expires_at')
      .where('jobs.expires_at', '>', watchedAfter);
  const plain: Partial<Record<TaskState, string>> = {
    [TaskState.TASK_STATE_SUBMITTED]: 'queued',
    [TaskState.TASK_STATE_WORKING]: 'running',
    [TaskState.TASK_STATE_COMPLETED]: 'succeeded',
    [TaskState.TASK_STATE_CANCELED]: 'cancelled',
  };
  if (plain[state]) void q.where('jobs.status', plain[state]);
  else if (state === TaskState.TASK_STATE_INPUT_REQUIRED)
    void q.where((b) => void b.where('jobs.status', 'awaiting_payment').orWhere((w) => void watched(w)));
  else if (state === TaskState.TASK_STATE_FAILED)
    void q.where(
      (b) =>
        void b
          .where('jobs.status', 'failed')
          .orWhere((w) => void w.where('jobs.status', 'expired').whereNot((n) => void watched(n))),
    );
  // No job is ever rejected or waiting for authentication.
  else void q.whereRaw('false');
}

/** One page of the caller's tasks. */
export async function listTasksOf(
  db: Db,
  caller: JobCaller,
  query: TaskListQuery,
  now = Date.now(),
): Promise<TaskListPage> {
  const { limit, after, since, status } = checked(query);
  const owner =
    caller.kind === 'agent'
      ? { column: 'jobs.agent_id', id: caller.agentId }
      : caller.kind === 'license'
        ? { column: 'jobs.license_id', id: caller.licenseId }
        : undefined;
  if (!owner) return { rows: [], nextPageToken: '', totalSize: 0 };
  const conversationState: Partial<Record<TaskState, string>> = {
    [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input_required',
    [TaskState.TASK_STATE_CANCELED]: 'canceled',
  };
  const conversations = ownedConversations(db('a2a_conversations'), caller)
    .whereNot('state', 'started')
    .modify((q) => {
      if (query.contextId) void q.where('context_id', query.contextId);
      if (status !== undefined) void q.where('state', conversationState[status] ?? '');
      if (since) void q.where('updated_at', '>', since);
    });
  const base = db('jobs')
    .leftJoin('a2a_tasks', 'a2a_tasks.job_id', 'jobs.id')
    .leftJoin('a2a_conversations', 'a2a_conversations.id', 'jobs.id')
    .where(owner.column, owner.id)
    .modify((q) => {
      if (query.contextId) void q.whereRaw('coalesce(a2a_tasks.context_id, jobs.id) = ?', [query.contextId]);
      if (status !== undefined) inState(q, status, now);
      if (since) void q.where('jobs.updated_at', '>', since);
    });
  const [jobs, jobCount, talks, talkCount] = await Promise.all([
    base
      .clone()
      .modify(
        (q) =>
          void (
            after && q.whereRaw(`(${US('jobs.updated_at')}, jobs.id) < (?::bigint, ?)`, [after.us, after.id])
          ),
      )
      .orderBy([
        { column: 'jobs.updated_at', order: 'desc' },
        { column: 'jobs.id', order: 'desc' },
      ])
      .limit(limit + 1)
      .select(
        'jobs.*',
        db.raw(`${US('jobs.updated_at')}::text as updated_us`),
        db.raw('coalesce(a2a_tasks.context_id, jobs.id) as context_id'),
        'a2a_conversations.history as history',
      ),
    base.clone().count<{ n: string }[]>({ n: '*' }),
    conversations
      .clone()
      .modify(
        (q) => void (after && q.whereRaw(`(${US('updated_at')}, id) < (?::bigint, ?)`, [after.us, after.id])),
      )
      .orderBy([
        { column: 'updated_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit + 1)
      .select('*', db.raw(`${US('updated_at')}::text as updated_us`)),
    conversations.clone().count<{ n: string }[]>({ n: '*' }),
  ]);
  // Jobs and conversations in one order: the last update first, then the id.
  type Keyed = ListedTask & { key: { us: bigint; id: string } };
  const keyOf = (r: { updated_us: string; id: string }) => ({ us: BigInt(r.updated_us), id: r.id });
  const merged: Keyed[] = [
    ...(jobs as Array<JobRow & { context_id: string; history: Message[] | null; updated_us: string }>).map(
      (job) => ({ key: keyOf(job), job }),
    ),
    ...(talks as Array<ConversationRow & { updated_us: string }>).map((conversation) => ({
      key: keyOf(conversation),
      conversation,
    })),
  ].sort((a, b) =>
    a.key.us !== b.key.us
      ? a.key.us < b.key.us
        ? 1
        : -1
      : a.key.id < b.key.id
        ? 1
        : a.key.id > b.key.id
          ? -1
          : 0,
  );
  const page = listPage(
    merged,
    limit,
    LIST,
    ({ key: _key, ...task }) => task as ListedTask,
    ({ key }) => `${key.us}_${key.id}`,
  );
  const totalSize = Number(jobCount[0]?.n ?? 0) + Number(talkCount[0]?.n ?? 0);
  return { rows: page.items, nextPageToken: page.nextCursor ?? '', totalSize };
}
