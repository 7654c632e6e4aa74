// A task's stream: its job's events (shared/jobs/follow.ts) as A2A updates, for streamed sends and
// resubscriptions alike, until the task reaches a state its stream stops at.
import type { StreamResponse, TaskState } from '@a2a-js/sdk';
import type { JobWatch } from '../jobs/follow';
import { watchEndsAt } from '../jobs/cancel';
import { followJob } from '../jobs/follow';
import { taskPayment } from './context';
import { eventUpdates, isTerminalState, taskStateOf, taskStatusOf } from './tasks';
import type { TaskContext } from './tasks';

/** Events after which a priced job's payment part is read again (requirements, then receipts). */
const paymentEvents = new Set(['awaiting_payment', 'expired', 'queued', 'succeeded']);

/**
 * The job's events after `after` as A2A updates, until one reaches a state `stop` accepts, the task
 * ends, or the signal aborts. A task that ends without an event of its own (a watched quote running
 * out, noticed on a re-read) ends with its status as it is.
 */
export async function* taskUpdates(
  watch: JobWatch,
  jobId: string,
  ctx: TaskContext,
  opts: { after: number; signal: AbortSignal; stop: (s: TaskState) => boolean },
): AsyncGenerator<StreamResponse, void, undefined> {
  const steps = followJob(watch, jobId, {
    after: opts.after,
    signal: opts.signal,
    ended: (row) => isTerminalState(taskStateOf(row)),
    // A watched quote fails when its watch ends, with no write to say so: a pass is made then.
    changesAt: watchEndsAt,
  });
  for await (const { events, row, last } of steps) {
    for (const event of events) {
      if (paymentEvents.has(event.type)) ctx.payment = await taskPayment(watch.db, row, ctx.base);
      for (const update of eventUpdates(event, row, ctx)) {
        yield update;
        if (update.payload?.$case === 'statusUpdate' && opts.stop(update.payload.value.status!.state)) return;
      }
    }
    if (last) {
      // Ended without an event that said so: say it and stop.
      yield {
        payload: {
          $case: 'statusUpdate',
          value: { taskId: row.id, contextId: ctx.contextId, status: taskStatusOf(row, ctx), metadata: {} },
        },
      };
      return;
    }
  }
}
