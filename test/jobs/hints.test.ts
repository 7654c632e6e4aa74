// Job hints wake long polls in every web process. A fresh process's first hints, made while its
// publisher is still connecting, are sent once it connects instead of being refused.
import { afterAll, describe, expect, it } from 'vitest';
import { JobNotifier, closeJobEvents, jobChanged } from '../../shared/jobs/notify';

const notifier = new JobNotifier();
afterAll(async () => {
  await notifier.close();
  await closeJobEvents();
});

describe('job hints', () => {
  it('delivers the hints a process makes before its publisher first connects', async () => {
    // The subscriber listens first (a hint has come through), then the publisher starts afresh.
    for (let i = 0; ; i++) {
      const warm = notifier.next('job_0warmup0', 250);
      jobChanged('job_0warmup0');
      if ((await warm) === 'changed') break;
      if (i > 40) throw new Error('the subscriber never heard a hint');
    }
    await closeJobEvents();
    const first = notifier.next('job_0first0', 1_900);
    const second = notifier.next('job_0second0', 1_900);
    jobChanged('job_0first0');
    jobChanged('job_0second0');
    expect(await first).toBe('changed');
    expect(await second).toBe('changed');
  });

  it('publishes at once once connected', async () => {
    const waiting = notifier.next('job_0later0', 1_900);
    jobChanged('job_0later0');
    expect(await waiting).toBe('changed');
  });
});
