// A hint the writer could not publish (its Redis connection was down) is published once it is back,
// so a web process that never lost Redis, and so never re-reads on a resubscription, still hears it.
// This file's publisher reaches Redis through a proxy the test cuts; the listener reaches it directly.
import { afterAll, describe, expect, it } from 'vitest';
import { tcpProxy } from './proxy';

const direct = process.env.REDIS_URL!;
const proxy = await tcpProxy(Number(new URL(direct).port || 6379));
// Set before the environment is first read: this process's publisher goes through the proxy.
process.env.REDIS_URL = `redis://127.0.0.1:${proxy.port}`;
const { JobNotifier, closeJobEvents, jobChanged, jobEventsChannel } =
  await import('../../shared/jobs/notify');

const notifier = new JobNotifier({ url: direct }, jobEventsChannel());
afterAll(async () => {
  await notifier.close();
  await closeJobEvents();
  await proxy.close();
});

describe('a writer that loses Redis', () => {
  it('publishes the hints it could not send once it reconnects', async () => {
    for (let i = 0; ; i++) {
      const warm = notifier.next('job_0warm0', 250);
      jobChanged('job_0warm0');
      if ((await warm) === 'changed') break;
      if (i > 40) throw new Error('the listener never heard a hint');
    }
    proxy.down();
    await new Promise((r) => setTimeout(r, 300));
    const waiting = notifier.next('job_0during0', 15_000);
    let heard = false;
    void waiting.then(() => (heard = true));
    jobChanged('job_0during0');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(heard).toBe(false);
    expect(notifier.healthy).toBe(true);
    proxy.up();
    const started = Date.now();
    expect(await waiting).toBe('changed');
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
