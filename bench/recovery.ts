// bench:recovery — how fast the sweeper enqueues again the rows Redis lost (Redis down at enqueue, or
// flushed): BENCH_ROWS open `jobs` rows without a BullMQ job (default 10,000), re-queued by one sweep
// (batches of one query, one pipeline and one addBulk), against the row-by-row loop the sweeper ran
// before (getJob, getState and add per row, 500 rows a tick) on BENCH_BASELINE_ROWS rows (default 1,000).
//   npm run bench:recovery
import { createJob } from '../shared/jobs/jobs';
import { sha256Hex } from '../shared/platform/crypto';
import { createDb } from '../shared/platform/db/knex';
import type { Db } from '../shared/platform/db/knex';
import { newId } from '../shared/platform/ids';
import { Queues } from '../shared/platform/queues';
import { createRedis } from '../shared/platform/redis';
import { jobsSweepTarget } from '../workers/processors/jobs';
import { Sweeper } from '../workers/sweeper';
import { printReport } from './report';
import { benchStack } from './stack';

const ROWS = Number(process.env.BENCH_ROWS ?? 10_000);
const BASELINE_ROWS = Number(process.env.BENCH_BASELINE_ROWS ?? 1000);

/** `n` open job rows, copies of one made by createJob, none of them in the queue. */
async function strand(db: Db, queues: Queues, n: number): Promise<void> {
  const { row } = await createJob(db, queues, {
    service: 'attest.timestamp',
    input: { digest: sha256Hex(`recovery ${Date.now()}`) },
  });
  await queues.get('jobs').remove(row.id);
  const columns = (
    (await db('information_schema.columns')
      .where({ table_name: 'jobs', table_schema: 'public' })
      .pluck('column_name')) as string[]
  ).filter((c) => c !== 'id');
  const list = columns.map((c) => `"${c}"`).join(', ');
  for (let done = 0; done < n; done += 1000) {
    const ids = Array.from({ length: Math.min(1000, n - done) }, () => newId('job'));
    await db.raw(
      `insert into jobs (id, ${list}) select i, ${list} from jobs, unnest(?::text[]) as i where id = ?`,
      [ids, row.id],
    );
  }
  await db('jobs').where({ id: row.id }).delete();
  await db('jobs').update({ updated_at: new Date(Date.now() - 60_000) });
}

/** The loop the sweeper ran before: each row's job looked up, then added, one row at a time. */
async function rowByRow(db: Db, queues: Queues): Promise<number> {
  const queue = queues.get('jobs');
  let n = 0;
  for (;;) {
    const rows = (await db('jobs').select('*').where({ status: 'queued' }).limit(500)) as Array<{
      id: string;
    }>;
    let added = 0;
    for (const row of rows) {
      const job = await queue.getJob(row.id);
      const state = job ? await job.getState() : 'missing';
      if (state === 'missing') {
        await queues.enqueue('jobs', { jobId: row.id });
        added++;
      }
    }
    n += added;
    if (added === 0) return n;
  }
}

const stack = await benchStack();
const db = createDb(stack.databaseUrl, { poolMax: 4 });
const redis = createRedis('api', stack.redisUrl);
const queues = new Queues(redis, stack.prefix);
try {
  await strand(db, queues, BASELINE_ROWS);
  let t = performance.now();
  const baselineRows = await rowByRow(db, queues);
  const baselineSeconds = (performance.now() - t) / 1000;
  await queues.get('jobs').obliterate({ force: true });
  await db('jobs').delete();

  await strand(db, queues, ROWS);
  const sweeper = new Sweeper(db, queues, redis, [jobsSweepTarget], { intervalMs: 60_000, graceMs: 0 });
  t = performance.now();
  const report = await sweeper.sweep();
  const seconds = (performance.now() - t) / 1000;
  const inQueue = await queues.get('jobs').getJobCountByTypes('waiting');
  if (report.requeued !== ROWS || inQueue !== ROWS)
    throw new Error(`re-queued ${report.requeued}, ${inQueue} waiting, of ${ROWS}`);
  printReport({
    bench: 'recovery',
    settings: { rows: ROWS, baselineRows: BASELINE_ROWS, batchSize: 1000 },
    figures: { requeueSeconds: seconds, rowsPerSecond: ROWS / seconds },
    baseline: { rowsPerSecond: baselineRows / baselineSeconds },
    target: { requeueSeconds: { max: 5 } },
  });
} finally {
  await queues
    .get('jobs')
    .obliterate({ force: true })
    .catch(() => undefined);
  await queues.close();
  redis.disconnect();
  await db.destroy();
  await stack.close();
}
