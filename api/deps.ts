// What a running API needs from the outside world, passed in so tests can point it at other stores.
import type { Clock } from '../shared/platform/clock';
import type { Db } from '../shared/platform/db/knex';
import type { JobNotifier } from '../shared/jobs/notify';
import type { Queues } from '../shared/platform/queues';
import type { RedisClient } from '../shared/platform/redis';
import type { OverloadLimits } from './http/overload';

export interface AppDeps {
  db: Db;
  redis: RedisClient;
  queues: Queues;
  notifier: JobNotifier;
  /** Absolute addresses for links; default: derived from the request. */
  urls: { base?: string | undefined; api?: string | undefined; site?: string | undefined };
  operatorToken?: string | undefined;
  /** When set, GET /metrics needs it as a Bearer token. */
  metricsToken?: string | undefined;
  /** When set (production without METRICS_TOKEN or METRICS_PUBLIC), GET /metrics is refused with it. */
  metricsRefused?: string | undefined;
  rateLimit: {
    enabled: boolean;
    ipPerMinute: number;
    keyPerMinute: number;
    /** Route budgets; default: from configuration. */
    proveAnonPerMinute?: number;
    verifyPerMinute?: number;
    proveMaxInFlight?: number;
    /** Failed credentials per client network per minute; default: from configuration. */
    authFailuresPerMinute?: number;
  };
  bodyLimitBytes: number;
  /** What windows (votes, reviews, bids, reveals) are read against: the system clock, a test's own. */
  clock: Clock;
  /** Load shedding (api/http/overload.ts); default: from configuration. */
  overload?: OverloadLimits;
}
