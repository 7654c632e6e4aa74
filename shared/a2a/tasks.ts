// A job seen as an A2A task (protocol 1.0): its state, status message, result artifact and, for a
// priced job, its payment requirements in the form of A2A's x402 extension. Pure: the callers load
// what it needs (the API from the request, the webhook relay from its batch).
import { Role, TaskState } from '@a2a-js/sdk';
import type { Artifact, Message, Part, StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import { z } from 'zod';
import { AppError, validationFailed } from '../platform/errors';
import { stillWatched } from '../jobs/cancel';
import type { JobEventRow, JobRow } from '../jobs/jobs';

/** The A2A protocol version the exchange serves (the one `@a2a-js/sdk`'s client speaks by default). */
export const A2A_PROTOCOL_VERSION = '1.0';
/** A2A's x402 payments extension (standalone flow): requirements in the status message's metadata. */
export const X402_EXTENSION_URI = 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2';
export const X402_META = {
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  receipts: 'x402.payment.receipts',
} as const;

export interface TaskPayment {
  /** x402 requirements (shared/payments x402Requirements) while the job awaits payment. */
  required?: unknown;
  /** Confirmed payments, as x402 settle responses. */
  receipts?: Array<{ success: true; transaction: string; network: string; payer: string | null }>;
}

export interface TaskContext {
  contextId: string;
  /** The exchange's public address, for links. */
  base: string;
  payment?: TaskPayment | undefined;
}

type Meta = Record<string, unknown>;
const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : undefined);

/** The A2A state of a job now. An expired quote still watched waits for input (a late payment). */
export function taskStateOf(job: Pick<JobRow, 'status' | 'expires_at'>, now = Date.now()): TaskState {
  switch (job.status) {
    case 'awaiting_payment':
      return TaskState.TASK_STATE_INPUT_REQUIRED;
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
      return TaskState.TASK_STATE_WORKING;
    case 'succeeded':
      return TaskState.TASK_STATE_COMPLETED;
    case 'failed':
      return TaskState.TASK_STATE_FAILED;
    case 'cancelled':
      return TaskState.TASK_STATE_CANCELED;
    case 'expired':
      return stillWatched(job, now) ? TaskState.TASK_STATE_INPUT_REQUIRED : TaskState.TASK_STATE_FAILED;
  }
}

const TERMINAL = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);
export const isTerminalState = (s: TaskState): boolean => TERMINAL.has(s);
/** Terminal, or waiting for the caller (a payment): where a blocking send returns. */
export const isSettledState = (s: TaskState): boolean =>
  isTerminalState(s) || s === TaskState.TASK_STATE_INPUT_REQUIRED || s === TaskState.TASK_STATE_AUTH_REQUIRED;

export function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    mediaType: 'text/plain',
    filename: '',
    metadata: undefined,
  };
}

function agentMessage(
  job: Pick<JobRow, 'id'>,
  ctx: TaskContext,
  id: string,
  text: string,
  metadata?: Meta,
): Message {
  return {
    messageId: `${job.id}/${id}`,
    contextId: ctx.contextId,
    taskId: job.id,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata,
    extensions: metadata && X402_META.status in metadata ? [X402_EXTENSION_URI] : [],
    referenceTaskIds: [],
  };
}

const links = (job: Pick<JobRow, 'id' | 'status'>, base: string) => ({
  job: `${base}/api/jobs/${job.id}`,
  events: `${base}/api/jobs/${job.id}/events`,
  ...(job.status === 'awaiting_payment' || job.status === 'expired'
    ? { payment: `${base}/api/jobs/${job.id}/payment` }
    : {}),
});

/** The x402 extension's part of a status message, when the job has one. */
function paymentMeta(state: TaskState, payment: TaskPayment | undefined): Meta | undefined {
  // x402's payment-required only with a requirement to pay (never an empty `accepts`); the quotes
  // without one are paid with submitPayment, as the status text says.
  if (state === TaskState.TASK_STATE_INPUT_REQUIRED) {
    return payment?.required
      ? { [X402_META.status]: 'payment-required', [X402_META.required]: payment.required }
      : undefined;
  }
  if (payment?.receipts?.length) {
    return { [X402_META.status]: 'payment-completed', [X402_META.receipts]: payment.receipts };
  }
  return undefined;
}

function describe(job: JobRow, state: TaskState, base: string, x402: boolean): string {
  switch (job.status) {
    case 'awaiting_payment':
      return `Payment required: ${job.price_usd_cents} USD cents for ${job.service_id}. Pay one of the quotes (${x402 ? "x402 requirements in this message's metadata, " : ''}all quotes at ${base}/api/jobs/${job.id}), then POST the transaction to ${base}/api/jobs/${job.id}/payment (Authorization: Bearer with this task's access token, or the key that created it).`;
    case 'queued':
      return 'Queued.';
    case 'running':
      return `Running${job.progress_stage ? ` (${job.progress_stage}, ${job.progress}%)` : ''}.`;
    case 'succeeded':
      return 'Completed; the result is the artifact "result".';
    case 'failed':
      return `Failed: ${job.error?.message ?? 'no reason recorded'}`;
    case 'cancelled':
      return 'Cancelled.';
    case 'expired':
      return state === TaskState.TASK_STATE_INPUT_REQUIRED
        ? `The quote expired unpaid; a transfer already made for it is still accepted at ${base}/api/jobs/${job.id}/payment until the watch window ends.`
        : 'The quote expired unpaid.';
  }
}

/** The job's status now, as an A2A TaskStatus. */
export function taskStatusOf(job: JobRow, ctx: TaskContext, now = Date.now()): TaskStatus {
  const state = taskStateOf(job, now);
  const payment = paymentMeta(state, ctx.payment);
  const error = job.status === 'failed' || job.status === 'expired' ? job.error : null;
  const metadata = { ...payment, ...(error ? { error } : {}) };
  return {
    state,
    message: agentMessage(
      job,
      ctx,
      `status/${job.status}`,
      describe(job, state, ctx.base, Boolean(ctx.payment?.required)),
      Object.keys(metadata).length ? metadata : undefined,
    ),
    timestamp: iso(job.updated_at),
  };
}

/** The job's result as the task's one artifact. */
export function resultArtifact(job: Pick<JobRow, 'result' | 'service_id'>): Artifact {
  return {
    artifactId: 'result',
    name: 'result',
    description: `The result of ${job.service_id}.`,
    parts: [
      {
        content: { $case: 'data', value: job.result ?? null },
        mediaType: 'application/json',
        filename: '',
        metadata: undefined,
      },
    ],
    metadata: undefined,
    extensions: [],
  };
}

/**
 * The job as an A2A Task. Its history is empty: the exchange never shows a job's input back (the
 * message that created it carried the input), and keeps no conversation beside it.
 */
export function taskFromJob(job: JobRow, ctx: TaskContext, now = Date.now()): Task {
  return {
    id: job.id,
    contextId: ctx.contextId,
    status: taskStatusOf(job, ctx, now),
    artifacts: job.status === 'succeeded' ? [resultArtifact(job)] : [],
    history: [],
    metadata: {
      service: job.service_id,
      jobStatus: job.status,
      priceUsdCents: job.price_usd_cents,
      progress: { percent: job.progress, stage: job.progress_stage },
      links: links(job, ctx.base),
    },
  };
}

/** Event types of a job that change (or report on) its state, each with the state it means. */
const eventStates: Record<string, TaskState | undefined> = {
  awaiting_payment: TaskState.TASK_STATE_INPUT_REQUIRED,
  queued: TaskState.TASK_STATE_SUBMITTED,
  running: TaskState.TASK_STATE_WORKING,
  progress: TaskState.TASK_STATE_WORKING,
  retry_scheduled: TaskState.TASK_STATE_WORKING,
  succeeded: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  cancelled: TaskState.TASK_STATE_CANCELED,
  // The quote ran out, but a transfer made for it is still accepted for a while.
  expired: TaskState.TASK_STATE_INPUT_REQUIRED,
};

function eventText(event: Pick<JobEventRow, 'type' | 'data'>): string {
  const d = event.data ?? {};
  switch (event.type) {
    case 'awaiting_payment':
      return 'Payment required.';
    case 'queued':
      return d.paymentId ? 'Paid; queued.' : 'Queued.';
    case 'running':
      return 'Running.';
    case 'progress':
      return `Running (${typeof d.stage === 'string' ? `${d.stage}, ` : ''}${String(d.percent ?? 0)}%).`;
    case 'retry_scheduled':
      return 'An attempt failed; it will be retried.';
    case 'succeeded':
      return 'Completed; the result is the artifact "result".';
    case 'failed':
      return `Failed: ${typeof d.message === 'string' ? d.message : 'no reason recorded'}`;
    case 'cancelled':
      return 'Cancelled.';
    case 'expired':
      return 'The quote expired unpaid; a transfer already made for it is still accepted until the watch window ends.';
    default:
      return event.type;
  }
}

/**
 * What one job event means on an A2A stream: a status update (with the event's sequence number in
 * its metadata), preceded by the result artifact when the job succeeded. `job` is the row as read
 * after the event (its result, once succeeded, no longer changes). Unknown event types mean nothing.
 */
export function eventUpdates(
  event: Pick<JobEventRow, 'id' | 'type' | 'data' | 'at'>,
  job: JobRow,
  ctx: TaskContext,
): StreamResponse[] {
  const state = eventStates[event.type];
  if (state === undefined) return [];
  // The x402 extension's part: requirements while waiting for a payment, receipts once paid and done.
  const payment = ['awaiting_payment', 'expired', 'succeeded'].includes(event.type)
    ? paymentMeta(state, ctx.payment)
    : undefined;
  const error =
    event.type === 'failed' && typeof event.data?.code === 'string'
      ? { error: { code: event.data.code, message: String(event.data.message ?? '') } }
      : {};
  const metadata = { ...payment, ...error };
  const out: StreamResponse[] = [];
  if (event.type === 'succeeded') {
    out.push({
      payload: {
        $case: 'artifactUpdate',
        value: {
          taskId: job.id,
          contextId: ctx.contextId,
          artifact: resultArtifact(job),
          append: false,
          lastChunk: true,
          metadata: undefined,
        },
      },
    });
  }
  out.push({
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: job.id,
        contextId: ctx.contextId,
        status: {
          state,
          message: agentMessage(
            job,
            ctx,
            `event/${event.id}`,
            eventText(event),
            Object.keys(metadata).length ? metadata : undefined,
          ),
          timestamp: iso(event.at),
        },
        metadata: { sequence: Number(event.id), jobEvent: event.type },
      },
    },
  });
  return out;
}

// ---------------------------------------------------------------------------------------------------
// The message that asks for a job

/** What the data part of a message asking for a job holds: the same `service` and `input` as createJob. */
export const taskRequestSchema = z.strictObject({
  service: z.string().min(1).max(100),
  input: z.record(z.string(), z.unknown()),
});
export type TaskRequest = z.output<typeof taskRequestSchema>;

/**
 * The job a message asks for: exactly one data part `{service, input}`. Text parts may ride along (a
 * note for people); files are not taken. Throws `400 validation_failed` naming the part.
 */
/** The text of a message that carries only text parts (joined by new lines); undefined for any other. */
export function textOnly(message: Pick<Message, 'parts'>): string | undefined {
  const texts: string[] = [];
  for (const part of message.parts) {
    if (part.content?.$case !== 'text') return undefined;
    texts.push(part.content.value);
  }
  return texts.length ? texts.join('\n') : undefined;
}

/** A text that is itself a request: the JSON of an object naming a service. */
export function requestInText(text: string): Record<string, unknown> | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  return value && typeof value === 'object' && !Array.isArray(value) && 'service' in value
    ? (value as Record<string, unknown>)
    : undefined;
}

export function taskRequestOf(message: Pick<Message, 'parts'>): TaskRequest {
  const data: Array<{ path: string; value: unknown }> = [];
  message.parts.forEach((part, index) => {
    const content = part.content;
    if (content?.$case === 'data') data.push({ path: `message.parts.${index}.data`, value: content.value });
    else if (content?.$case === 'raw' || content?.$case === 'url') {
      // A2A's ContentTypeNotSupported: the part is well formed, of a kind this agent does not take.
      throw new AppError(
        415,
        'content_type_not_supported',
        'The message carries a file; this agent takes one data part {"service", "input"} (or text).',
        {
          errors: [{ path: `message.parts.${index}`, message: 'file parts are not taken; send a data part' }],
        },
      );
    }
  });
  // Text only: the request may be its JSON.
  const text = data.length === 0 ? textOnly(message) : undefined;
  const fromText = text === undefined ? undefined : requestInText(text);
  if (fromText) data.push({ path: 'message.parts.text', value: fromText });
  if (data.length !== 1) {
    throw validationFailed(
      [{ path: 'message.parts', message: `expected exactly one data part, found ${data.length}` }],
      'The message must carry exactly one data part {"service": "<id from the agent card>", "input": {…}}.',
    );
  }
  const [{ path, value }] = data as [{ path: string; value: unknown }];
  const parsed = taskRequestSchema.safeParse(value);
  if (!parsed.success) {
    throw validationFailed(
      parsed.error.issues.map((i) => ({
        path: [path, ...i.path].join('.'),
        message: i.message,
      })),
      'The data part must be {"service": "<id from the agent card>", "input": {…}}.',
    );
  }
  return parsed.data;
}

// ---------------------------------------------------------------------------------------------------
// A conversation (./conversations.ts): the task a message of text alone makes

/**
 * A task's history as asked: all of it when `historyLength` is absent, none for 0, else the last
 * `historyLength` messages (A2A 1.0 §3.2.4).
 */
export function withHistory(task: Task, history: Message[], historyLength?: number): Task {
  const kept =
    historyLength === undefined ? history : historyLength <= 0 ? [] : history.slice(-historyLength);
  return { ...task, history: kept };
}

/** A conversation as an A2A task: waiting for a request (its status: the agent's last reply), or cancelled. */
export function taskFromConversation(
  row: Pick<ConversationRowView, 'id' | 'context_id' | 'state' | 'history' | 'updated_at'>,
  base: string,
): Task {
  const canceled = row.state === 'canceled';
  const lastReply = [...row.history].reverse().find((m) => m.role === Role.ROLE_AGENT);
  const message: Message | undefined = canceled
    ? {
        messageId: `${row.id}/status/canceled`,
        contextId: row.context_id,
        taskId: row.id,
        role: Role.ROLE_AGENT,
        parts: [textPart('Cancelled.')],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      }
    : lastReply;
  return {
    id: row.id,
    contextId: row.context_id,
    status: {
      state: canceled ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_INPUT_REQUIRED,
      message,
      timestamp: iso(row.updated_at),
    },
    artifacts: [],
    history: row.history,
    metadata: {
      conversation: canceled ? 'canceled' : 'waiting for a request',
      links: { services: `${base}/api/services` },
    },
  };
}

/** What a conversation row holds that its task view reads (shared/a2a/conversations.ts). */
export interface ConversationRowView {
  id: string;
  context_id: string;
  state: 'input_required' | 'canceled' | 'started';
  history: Message[];
  updated_at: Date | string;
}
