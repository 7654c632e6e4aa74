// What a running API needs from the outside world, passed in so tests can point it at other stores.
import type { Redis } from 'ioredis';
import type { Db } from '../shared/db/knex';
import type { JobNotifier } from '../shared/jobs/notify';
import type { Queues } from '../shared/queues';

export interface AppDeps {
  db: Db;
  redis: Redis;
  queues: Queues;
  notifier: JobNotifier;
  /** Absolute addresses for links; default: derived from the request. */
  urls: { base?: string | undefined; api?: string | undefined; site?: string | undefined };
  operatorToken?: string | undefined;
  rateLimit: { enabled: boolean; ipPerMinute: number; keyPerMinute: number };
  bodyLimitBytes: number;
}
