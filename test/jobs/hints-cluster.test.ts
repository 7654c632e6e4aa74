// On a Redis Cluster the notifier listens once the cluster is ready, and a hint published through
// any node wakes its waiters.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProgram, startLocalCluster } from '../../dev/stack/redis-cluster';
import type { LocalCluster } from '../../dev/stack/redis-cluster';
import { JobNotifier, jobEventsChannel } from '../../shared/jobs/notify';
import { parseEnv } from '../../shared/platform/env';
import { createRedis } from '../../shared/platform/redis';
import type { RedisClient } from '../../shared/platform/redis';
import { eventually } from '../helpers';

const missing = ['redis-server', 'redis-cli'].filter((p) => !findProgram(p));
const prefix = '{pxhc}';

describe.skipIf(missing.length > 0)('job hints on a Redis Cluster', () => {
  let cluster: LocalCluster;
  let notifier: JobNotifier;
  let publisher: RedisClient;
  beforeAll(async () => {
    cluster = await startLocalCluster(3);
    const seeds = parseEnv({ REDIS_CLUSTER_NODES: cluster.nodes, QUEUE_PREFIX: prefix }).REDIS_CLUSTER_NODES!;
    notifier = new JobNotifier({ cluster: seeds }, jobEventsChannel(prefix));
    publisher = createRedis('worker', { cluster: seeds });
  });
  afterAll(async () => {
    await notifier?.close();
    publisher?.disconnect();
    await cluster?.stop();
  });

  it('wakes a waiter on a hint published on the cluster', async () => {
    const first = notifier.next('job_0cluster0', 10_000);
    // The first wait starts the subscription; once it listens, waiters are woken once to re-read.
    expect(await first).toBe('changed');
    await eventually(async () => notifier.healthy);
    const waiting = notifier.next('job_0cluster1', 10_000);
    await publisher.publish(jobEventsChannel(prefix), 'job_0cluster1');
    expect(await waiting).toBe('changed');
  });
});
