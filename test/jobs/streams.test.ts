// Job event streams are driven by hints, not by a clock: idle streams read nothing from Postgres, a
// hint wakes its stream at once, a subscription that comes back makes every stream re-read (so a
// change whose hint was lost still arrives), and a stream that loses its source (Postgres, or hints
// for longer than SUBSCRIPTION_LOST_MS) ends with an `error` event; resuming with Last-Event-ID then
// gives exactly the events missed. Outages are played by TCP proxies on loopback that the test closes,
// never by stopping the shared Postgres or Redis.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { Message, Task } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { claimJob, completeJob } from '../../shared/jobs/jobs';
import { JobNotifier, SUBSCRIPTION_LOST_MS, jobEventsChannel } from '../../shared/jobs/notify';
import { createDb } from '../../shared/platform/db/knex';
import type { Db } from '../../shared/platform/db/knex';
import { bearer, eventually, sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { tcpProxy } from './proxy';

interface SseEvent {
  id?: string;
  event: string;
  data: string;
  retry?: string;
}

/** One open event stream: its events as they come, and whether it ended. */
interface Stream {
  status: number;
  events: SseEvent[];
  ended: Promise<void>;
  /** Resolves with the first event of the type (seen already, or to come). */
  next(type: string, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

function openStream(port: number, jobId: string, token: string, lastEventId?: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...bearer(token), Accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['Last-Event-ID'] = lastEventId;
    const req = http.get({
      host: '127.0.0.1',
      port,
      path: `/api/jobs/${jobId}/events`,
      headers,
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const events: SseEvent[] = [];
      const listeners = new Set<() => void>();
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const e: SseEvent = { event: 'message', data: '' };
          let any = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const [field, ...rest] = line.split(': ');
            const value = rest.join(': ');
            any = true;
            if (field === 'id') e.id = value;
            else if (field === 'event') e.event = value;
            else if (field === 'data') e.data = value;
            else if (field === 'retry') e.retry = value;
          }
          if (any) events.push(e);
        }
        for (const l of listeners) l();
      });
      const ended = new Promise<void>((r) => res.on('close', () => r()));
      resolve({
        status: res.statusCode ?? 0,
        events,
        ended,
        next: (type, timeoutMs = 10_000) =>
          new Promise((ok, fail) => {
            const check = () => {
              const found = events.find((e) => e.event === type);
              if (!found) return;
              listeners.delete(check);
              clearTimeout(timer);
              ok(found);
            };
            const timer = setTimeout(() => {
              listeners.delete(check);
              fail(new Error(`no ${type} event in ${timeoutMs} ms (saw ${events.map((e) => e.event)})`));
            }, timeoutMs);
            listeners.add(check);
            check();
          }),
        close: () => req.destroy(),
      });
    });
  });
}

/** The app of `t` listening on a loopback port. */
async function listen(t: TestApp): Promise<{ port: number; close(): Promise<void> }> {
  const app = createApp(t.deps);
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function newJob(t: TestApp, text: string): Promise<{ id: string; token: string }> {
  const res = await t.request
    .post('/api/jobs')
    .send({ service: 'attest.timestamp', input: { digest: await sha256Of(text) } })
    .expect(202);
  return { id: res.body.job.id as string, token: res.body.accessToken as string };
}

/** Counts the queries an app's database runs, with their bindings. */
function countQueries(db: Db) {
  const seen: unknown[][] = [];
  const onQuery = (q: { bindings?: unknown[] }) => seen.push(q.bindings ?? []);
  db.on('query', onQuery);
  return { seen, stop: () => db.off('query', onQuery) };
}

/** The writer: another pool, as a worker's would be (its hints go out on Redis like a worker's). */
let writer: Db;
beforeAll(() => {
  writer = createDb();
});
afterAll(async () => {
  await writer.destroy();
});

describe('idle streams', () => {
  let t: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    t = testApp();
    t.deps.rateLimit = { ...t.deps.rateLimit, enabled: false };
    server = await listen(t);
  });
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  it('200 open streams read nothing from Postgres while nothing happens, and a hint wakes only its own at once', async () => {
    const jobs = await Promise.all(Array.from({ length: 20 }, (_, i) => newJob(t, `idle ${i}`)));
    const streams = await Promise.all(
      jobs.flatMap((j) => Array.from({ length: 10 }, () => openStream(server.port, j.id, j.token))),
    );
    try {
      expect(streams.every((s) => s.status === 200)).toBe(true);
      await Promise.all(streams.map((s) => s.next('queued')));
      // Every stream has read its job and now waits.
      const waiters = (t.deps.notifier as unknown as { waiters: Map<string, Set<unknown>> }).waiters;
      await eventually(async () => jobs.every((j) => waiters.get(j.id)?.size === 10));

      const idle = countQueries(t.deps.db);
      await new Promise((r) => setTimeout(r, 3_000));
      idle.stop();
      // Re-reading every 2 s, as streams did, would be about 300 queries here.
      expect(idle.seen).toHaveLength(0);

      const woken = countQueries(t.deps.db);
      const target = jobs[0]!;
      const started = Date.now();
      expect(await claimJob(writer, target.id)).toBeDefined();
      const mine = streams.slice(0, 10);
      await Promise.all(mine.map((s) => s.next('running', 2_000)));
      expect(Date.now() - started).toBeLessThan(1_500);
      await new Promise((r) => setTimeout(r, 300));
      woken.stop();
      // Only the streams of the changed job read, and only about it.
      expect(woken.seen.length).toBeGreaterThan(0);
      expect(woken.seen.every((bindings) => bindings.includes(target.id))).toBe(true);
      expect(streams.slice(10).every((s) => !s.events.some((e) => e.event === 'running'))).toBe(true);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('refuses a Last-Event-ID that is not one of its event ids, before streaming', async () => {
    const job = await newJob(t, 'bad cursor');
    for (const bad of ['abc', '-1', '1e400', '9'.repeat(30)]) {
      const res = await t.request
        .get(`/api/jobs/${job.id}/events`)
        .set(bearer(job.token))
        .set('Last-Event-ID', bad);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
      expect(res.body.code).toBe('validation_failed');
    }
  });
});

describe('the safety check', () => {
  let t: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    t = testApp({ notifier: new JobNotifier(undefined, jobEventsChannel(), 500) });
    server = await listen(t);
  });
  afterAll(async () => {
    await server.close();
    await t.close();
  });

  it('delivers a change that published no hint, in one query for all streams', async () => {
    const jobs = await Promise.all(Array.from({ length: 10 }, (_, i) => newJob(t, `unhinted ${i}`)));
    const streams = await Promise.all(
      jobs.flatMap((j) => [openStream(server.port, j.id, j.token), openStream(server.port, j.id, j.token)]),
    );
    try {
      await Promise.all(streams.map((s) => s.next('queued')));
      await new Promise((r) => setTimeout(r, 600));
      // 20 idle streams, about three checks: one query each, whatever the number of streams.
      const idle = countQueries(t.deps.db);
      await new Promise((r) => setTimeout(r, 1_600));
      idle.stop();
      expect(idle.seen.length).toBeGreaterThanOrEqual(2);
      expect(idle.seen.length).toBeLessThanOrEqual(4);
      // A writer that died between its commit and its publish: the change is there, its hint is not.
      const target = jobs[0]!;
      await writer.raw(
        `with u as (update jobs set status = 'running', updated_at = now() where id = ? returning id)
         insert into job_events (job_id, type, data) select id, 'running', '{}'::jsonb from u`,
        [target.id],
      );
      await Promise.all(streams.slice(0, 2).map((s) => s.next('running', 2_000)));
      expect(streams.slice(2).every((s) => !s.events.some((e) => e.event === 'running'))).toBe(true);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

describe('a subscription that drops', () => {
  let redisProxy: Awaited<ReturnType<typeof tcpProxy>>;
  let t: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    redisProxy = await tcpProxy(Number(new URL(process.env.REDIS_URL!).port || 6379));
    t = testApp({
      notifier: new JobNotifier({ url: `redis://127.0.0.1:${redisProxy.port}` }, jobEventsChannel()),
    });
    server = await listen(t);
  });
  afterAll(async () => {
    await server.close();
    await t.close();
    await redisProxy.close();
  });

  it('makes every stream re-read once it is back: a change whose hint was lost still arrives', async () => {
    const job = await newJob(t, 'resubscribe');
    const stream = await openStream(server.port, job.id, job.token);
    try {
      await stream.next('queued');
      await eventually(async () => t.deps.notifier.healthy);
      redisProxy.down();
      await eventually(async () => !t.deps.notifier.healthy);
      // Published while this process does not listen: nobody here hears it.
      expect(await claimJob(writer, job.id)).toBeDefined();
      await new Promise((r) => setTimeout(r, 500));
      expect(stream.events.map((e) => e.event)).toEqual(['queued']);
      redisProxy.up();
      // Back well within SUBSCRIPTION_LOST_MS; the safety re-read (60 s) is far off.
      await stream.next('running', SUBSCRIPTION_LOST_MS);
      expect(stream.events.map((e) => e.event)).toEqual(['queued', 'running']);
    } finally {
      stream.close();
      redisProxy.up();
    }
  });

  it('ends a stream with an error event when it stays down, and resuming gives the rest once', async () => {
    const job = await newJob(t, 'subscription lost');
    const stream = await openStream(server.port, job.id, job.token);
    await stream.next('queued');
    await eventually(async () => t.deps.notifier.healthy);
    redisProxy.down();
    try {
      // Only once this process has noticed: a change published before the cut reaches it as usual.
      await eventually(async () => !t.deps.notifier.healthy);
      expect(await claimJob(writer, job.id)).toBeDefined();
      const error = await stream.next('error', SUBSCRIPTION_LOST_MS + 5_000);
      await stream.ended;
      expect(error.id).toBeUndefined();
      expect(Number(error.retry)).toBeGreaterThan(0);
      const problem = JSON.parse(error.data);
      expect(problem).toMatchObject({ code: 'stream_interrupted', status: 503 });
      const queued = stream.events.find((e) => e.event === 'queued')!;
      expect(problem.lastEventId).toBe(queued.id);
      expect(stream.events.map((e) => e.event)).toEqual(['queued', 'error']);
    } finally {
      redisProxy.up();
    }
    await eventually(async () => t.deps.notifier.healthy);
    const queuedId = stream.events[0]!.id!;
    const resumed = await openStream(server.port, job.id, job.token, queuedId);
    await resumed.next('running');
    expect(await completeJob(writer, job.id, { ok: true })).toBeDefined();
    await resumed.next('succeeded');
    await resumed.ended;
    expect(resumed.events.map((e) => e.event)).toEqual(['running', 'succeeded']);
  });
});

describe('Postgres failing mid-stream', () => {
  let pgProxy: Awaited<ReturnType<typeof tcpProxy>>;
  let t: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    const url = new URL(process.env.DATABASE_URL!);
    pgProxy = await tcpProxy(Number(url.port || 5432));
    url.host = `127.0.0.1:${pgProxy.port}`;
    t = testApp({ db: createDb(url.toString()) });
    server = await listen(t);
  });
  afterAll(async () => {
    await server.close();
    await t.close();
    await pgProxy.close();
  });

  it('sends an error event and ends; resuming with Last-Event-ID gets exactly the events missed', async () => {
    const job = await newJob(t, 'postgres drops');
    const stream = await openStream(server.port, job.id, job.token);
    await stream.next('queued');
    pgProxy.down();
    try {
      // The hint wakes the stream; its read fails.
      expect(await claimJob(writer, job.id)).toBeDefined();
      const error = await stream.next('error');
      await stream.ended;
      expect(JSON.parse(error.data)).toMatchObject({
        code: 'stream_interrupted',
        status: 503,
        lastEventId: stream.events[0]!.id,
      });
      expect(error.retry).toBeDefined();
      expect(stream.events.map((e) => e.event)).toEqual(['queued', 'error']);
      // Nothing about the store's failure reaches the client.
      expect(error.data).not.toMatch(/ECONN|terminated|127\.0\.0\.1|postgres/i);
    } finally {
      pgProxy.up();
    }
    expect(await completeJob(writer, job.id, { ok: true })).toBeDefined();
    const resumed = await openStream(server.port, job.id, job.token, stream.events[0]!.id);
    await resumed.ended;
    expect(resumed.events.map((e) => e.event)).toEqual(['running', 'succeeded']);
    const ids = resumed.events.map((e) => Number(e.id));
    expect(ids.every((id) => id > Number(stream.events[0]!.id))).toBe(true);
    expect(new Set(ids).size).toBe(2);
  });

  it('ends an A2A stream with its transport error event, code stream_interrupted', async () => {
    t.deps.urls.base = `http://127.0.0.1:${server.port}`;
    const client = await new ClientFactory().createFromUrl(t.deps.urls.base);
    const message: Message = {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [
        {
          content: {
            $case: 'data',
            value: { service: 'attest.timestamp', input: { digest: await sha256Of('a2a drops') } },
          },
          mediaType: 'application/json',
          filename: '',
          metadata: undefined,
        },
      ],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    const seen: string[] = [];
    const stream = (async () => {
      for await (const e of client.sendMessageStream({
        tenant: '',
        message,
        configuration: undefined,
        metadata: undefined,
      })) {
        seen.push(e.payload?.$case ?? '');
        if (e.payload?.$case === 'task') {
          pgProxy.down();
          await claimJob(writer, (e.payload.value as Task).id);
        }
      }
    })();
    try {
      const err = (await stream.then(
        () => undefined,
        (e: unknown) => e,
      )) as { message?: string; metadata?: Record<string, string> } | undefined;
      expect(err).toBeDefined();
      expect(JSON.stringify({ message: err!.message, metadata: err!.metadata })).toMatch(
        /stream_interrupted|follow the job/,
      );
      expect(seen).toEqual(['task']);
    } finally {
      pgProxy.up();
    }
  });
});
