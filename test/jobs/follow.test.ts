// The one loop that follows a job (long polls, the event stream, A2A waits and streams): its passes
// read the events, then the row, so a job that ends between the two reads is followed to its final
// event; it waits between passes only while the job goes on, and ends once the job has ended and no
// event is left. Postgres is played by a script here, so each race happens on every run.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { JobEventRow, JobRow } from '../../shared/jobs/jobs';

const store = vi.hoisted(() => ({ events: [] as unknown[][], rows: [] as unknown[] }));
vi.mock('../../shared/jobs/jobs', () => ({
  jobEvents: vi.fn(async () => store.events.shift() ?? []),
  getJob: vi.fn(async () => store.rows.shift()),
}));
const { firstEventId, followJob, waitForJob } = await import('../../shared/jobs/follow');
import type { JobWatch } from '../../shared/jobs/follow';

const row = (status: JobRow['status']) => ({ id: 'job_1', status }) as JobRow;
const event = (id: number, type: string) =>
  ({ id: String(id), type, data: {}, at: new Date() }) as JobEventRow;
const ended = (r: JobRow) => r.status === 'succeeded';

let waits: number;
/** What the notifier answers, wait by wait ('changed' once the script is out). */
let wakes: Array<'changed' | 'timeout' | 'lost'>;
const watch = {
  db: {},
  notifier: {
    next: async (_jobId: string, timeoutMs: number) => {
      waits++;
      const how = wakes.shift() ?? 'changed';
      // A short wait that runs out takes its time (long ones are played as over at once).
      if (how === 'timeout' && timeoutMs < 1000) await new Promise((r) => setTimeout(r, timeoutMs + 1));
      return how;
    },
  },
} as unknown as JobWatch;

async function steps(after = 0) {
  const out: Array<{ events: string[]; status: string; last: boolean }> = [];
  for await (const s of followJob(watch, 'job_1', { after, signal: new AbortController().signal, ended })) {
    out.push({ events: s.events.map((e) => e.type), status: s.row.status, last: s.last });
  }
  return out;
}

beforeEach(() => {
  store.events = [];
  store.rows = [];
  waits = 0;
  wakes = [];
});

describe('followJob', () => {
  it('streams events pass by pass, waiting between them, and ends with the final one', async () => {
    store.events = [[event(1, 'queued'), event(2, 'running')], [], [event(3, 'succeeded')], []];
    store.rows = [row('running'), row('running'), row('succeeded')];
    expect(await steps()).toEqual([
      { events: ['queued', 'running'], status: 'running', last: false },
      { events: [], status: 'running', last: false },
      { events: ['succeeded'], status: 'succeeded', last: true },
    ]);
    expect(waits).toBe(2);
  });

  it('follows a job that ended between reading its events and its row to its final event, at once', async () => {
    // No event yet, but the row read next is final: its final event landed in between.
    store.events = [[], [event(3, 'succeeded')], [event(3, 'succeeded')], []];
    store.rows = [row('succeeded'), row('succeeded')];
    expect(await steps(2)).toEqual([
      { events: [], status: 'succeeded', last: false },
      { events: ['succeeded'], status: 'succeeded', last: true },
    ]);
    expect(waits).toBe(0);
  });

  it('ends a job that ended without an event of its own', async () => {
    store.events = [[], []];
    store.rows = [row('succeeded')];
    expect(await steps(5)).toEqual([{ events: [], status: 'succeeded', last: true }]);
  });

  it('reads nothing on a quiet wait: it yields the row as it was and waits again', async () => {
    const { jobEvents, getJob } = await import('../../shared/jobs/jobs');
    vi.mocked(jobEvents).mockClear();
    vi.mocked(getJob).mockClear();
    // Two quiet stretches (no hint), then the hint of the final event.
    wakes = ['timeout', 'timeout', 'changed'];
    store.events = [[event(1, 'running')], [event(2, 'succeeded')], []];
    store.rows = [row('running'), row('succeeded')];
    expect(await steps()).toEqual([
      { events: ['running'], status: 'running', last: false },
      { events: [], status: 'running', last: false },
      { events: [], status: 'running', last: false },
      { events: ['succeeded'], status: 'succeeded', last: true },
    ]);
    // Two passes (events, row, events again at the end): the quiet steps read nothing.
    expect(vi.mocked(jobEvents)).toHaveBeenCalledTimes(3);
    expect(vi.mocked(getJob)).toHaveBeenCalledTimes(2);
  });

  it('ends with stream_interrupted when the hints are lost', async () => {
    wakes = ['lost'];
    store.events = [[event(1, 'running')]];
    store.rows = [row('running')];
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const s of followJob(watch, 'job_1', {
          after: 0,
          signal: new AbortController().signal,
          ended,
        }))
          seen.push(...s.events.map((e) => e.type));
      })(),
    ).rejects.toMatchObject({ code: 'stream_interrupted', status: 503 });
    expect(seen).toEqual(['running']);
  });

  it('re-reads, without a hint, when the row is due to mean something else (changesAt)', async () => {
    wakes = ['timeout'];
    store.events = [[], [], []];
    store.rows = [row('running'), row('succeeded')];
    const out: Array<{ status: string; last: boolean }> = [];
    const due = Date.now() + 50;
    for await (const s of followJob(watch, 'job_1', {
      after: 0,
      signal: new AbortController().signal,
      ended,
      changesAt: (r) => (r.status === 'running' ? due : undefined),
    }))
      out.push({ status: s.row.status, last: s.last });
    // No quiet step in between: the wait ended at the due time, and the pass read the row again.
    expect(out).toEqual([
      { status: 'running', last: false },
      { status: 'succeeded', last: true },
    ]);
    expect(Date.now()).toBeGreaterThanOrEqual(due);
  });

  it('stops when the signal aborts', async () => {
    const abort = new AbortController();
    store.events = [[event(1, 'running')]];
    store.rows = [row('running')];
    const seen: string[] = [];
    for await (const s of followJob(watch, 'job_1', { after: 0, signal: abort.signal, ended })) {
      seen.push(...s.events.map((e) => e.type));
      abort.abort();
    }
    expect(seen).toEqual(['running']);
  });
});

describe('waitForJob', () => {
  const signal = new AbortController().signal;

  it('answers the very row passed in when it already holds, reading nothing', async () => {
    const start = row('succeeded');
    expect(await waitForJob(watch, start, ended, { signal })).toBe(start);
    expect(waits).toBe(0);
  });

  it('re-reads after each wait until the row holds', async () => {
    store.rows = [row('running'), row('succeeded')];
    expect((await waitForJob(watch, row('queued'), ended, { signal })).status).toBe('succeeded');
    expect(waits).toBe(2);
  });

  it('answers the row it has, without reading, when the wait runs out without a hint', async () => {
    const { getJob } = await import('../../shared/jobs/jobs');
    vi.mocked(getJob).mockClear();
    wakes = ['timeout'];
    const start = row('queued');
    expect(await waitForJob(watch, start, ended, { signal, deadline: Date.now() + 20 })).toBe(start);
    expect(vi.mocked(getJob)).not.toHaveBeenCalled();
  });

  it('re-reads on its own while hints are lost, until the row holds', async () => {
    wakes = ['lost'];
    store.rows = [row('succeeded')];
    const started = Date.now();
    const found = await waitForJob(watch, row('queued'), ended, { signal, deadline: Date.now() + 200 });
    expect(found.status).toBe('succeeded');
    // It paused before reading (FALLBACK_REREAD_MS, cut to the deadline), rather than spinning.
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('answers the row as last read once the deadline passed', async () => {
    const start = row('queued');
    expect(await waitForJob(watch, start, ended, { signal, deadline: Date.now() })).toBe(start);
    expect(waits).toBe(0);
  });
});

describe('firstEventId', () => {
  it('is 0 for a job without events', async () => {
    const db = () => ({ where: () => ({ min: () => ({ first: async () => ({ id: null }) }) }) });
    expect(await firstEventId(db as never, 'job_1')).toBe(0);
  });
});
