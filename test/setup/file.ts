// Before each test file: a fresh database cloned from the migrated template, a unique queue prefix,
// and the environment pointing at both. Removed again after the file.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, inject, vi } from 'vitest';

// Test files share a worker process and the libraries it loaded (vitest.config.ts: isolate off), but
// never each other's state: every file starts from the environment the worker started with and loads
// the project's own modules afresh (configuration is parsed at import), so what one file set or cached
// cannot reach the next.
const started = ((globalThis as { __pxStartEnv?: NodeJS.ProcessEnv }).__pxStartEnv ??= { ...process.env });
for (const key of Object.keys(process.env)) if (!(key in started)) delete process.env[key];
Object.assign(process.env, started);
vi.resetModules();

// Vite sets BASE_URL to '/' for its own use; ours is an absolute address or unset.
if (process.env.BASE_URL === '/') delete process.env.BASE_URL;
const adminUrl = inject('pgAdminUrl');
const template = inject('pgTemplate');
const redisUrl = inject('redisUrl');
const suffix = randomBytes(5).toString('hex');
const database = `px_t_${template.split('_')[2]}_${suffix}`;
const prefix = `pxt_${suffix}`;

const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
await admin.query(`create database "${database}" template "${template}"`);
await admin.end();

const url = new URL(adminUrl);
url.pathname = `/${database}`;
process.env.DATABASE_URL = url.toString();
process.env.REDIS_URL = redisUrl;
process.env.QUEUE_PREFIX = prefix;
process.env.DATA_DIR = inject('dataDir');
process.env.LOG_LEVEL = process.env.TEST_LOG_LEVEL ?? 'silent';
process.env.NODE_ENV = 'test';
process.env.OPERATOR_TOKEN = 'op_test_token_0123456789';
process.env.WORKER_LOCK_DURATION_MS ??= '2000';
process.env.SWEEP_GRACE_MS ??= '200';
process.env.JOB_BACKOFF_MS ??= '50';
// The suite runs many files at once on a few cores, where a request's time in the process says more
// about its neighbours than about its own load: shedding on that time is off here (a test's burst of
// concurrent requests is not an overload), and tested on its own in test/security/overload.test.ts,
// which sets its limits explicitly.
process.env.OVERLOAD_TARGET_MS ??= '0';
// Tests change a dependency (stop a chain node, retire a key, alter an artifact) and read readiness or
// health at once: here they run their probes on every request (concurrent ones still share a run).
// test/security/readiness-cost.test.ts sets the default and counts what a burst costs.
process.env.READINESS_CACHE_MS ??= '0';

afterAll(async () => {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists "${database}" with (force)`);
  await client.end();
});
