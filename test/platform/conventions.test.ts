// The conventions every route follows: problem+json errors with stable codes, nothing written on bad
// input, idempotency keys, body limits, rate limits, operator auth, OpenAPI, metrics, request ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logger } from '../../shared/platform/log';
import { Queues } from '../../shared/platform/queues';
import { waitReady } from '../../shared/platform/redis';
import { sha256Of, testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { registerAgent } from '../exchange/fixtures';
import { captureLogs } from '../logs';

let app: TestApp;
const jobCount = async () => Number((await app.deps.db('jobs').count({ n: '*' }))[0]!.n);
const eventCount = async () => Number((await app.deps.db('job_events').count({ n: '*' }))[0]!.n);

beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code, type: `/problems/${code}` });
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .+\.ts:\d+/); // never a stack trace
}

describe('bad input gets a 4xx problem and writes nothing', () => {
  const digest = 'a'.repeat(64);
  const cases: Array<
    [
      string,
      () => Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown> }>,
      number,
      string,
    ]
  > = [
    [
      'unknown field',
      () => app.request.post('/api/jobs').send({ service: 'attest.timestamp', input: { digest }, x: 1 }),
      400,
      'validation_failed',
    ],
    [
      'missing service',
      () => app.request.post('/api/jobs').send({ input: { digest } }),
      400,
      'validation_failed',
    ],
    [
      'unknown service',
      () => app.request.post('/api/jobs').send({ service: 'nope', input: {} }),
      422,
      'unknown_service',
    ],
    [
      'input not matching the service',
      () => app.request.post('/api/jobs').send({ service: 'attest.timestamp', input: { digest: 'xyz' } }),
      400,
      'validation_failed',
    ],
    [
      'unknown input field',
      () => app.request.post('/api/jobs').send({ service: 'attest.timestamp', input: { digest, note: 'x' } }),
      400,
      'validation_failed',
    ],
    [
      'malformed JSON',
      () => app.request.post('/api/jobs').set('content-type', 'application/json').send('{"service":'),
      400,
      'malformed_json',
    ],
    ['JSON array body', () => app.request.post('/api/jobs').send([1, 2]), 400, 'validation_failed'],
    [
      'not JSON',
      () => app.request.post('/api/jobs').set('content-type', 'text/plain').send('hello'),
      415,
      'unsupported_media_type',
    ],
    [
      'too large',
      () =>
        app.request
          .post('/api/jobs')
          .send({ service: 'attest.timestamp', input: { digest, pad: 'x'.repeat(70_000) } }),
      413,
      'payload_too_large',
    ],
    ['bad job id', () => app.request.get('/api/jobs/not-a-job'), 400, 'validation_failed'],
    ['unknown job', () => app.request.get('/api/jobs/job_01m7ycenb0y37det98dds34qjx'), 404, 'not_found'],
    ['unknown query parameter', () => app.request.get('/api/services?foo=1'), 400, 'validation_failed'],
    ['unknown route', () => app.request.get('/api/nothing-here'), 404, 'not_found'],
    ['body on a GET-only route', () => app.request.post('/api/health').send({}), 404, 'not_found'],
    [
      'bad idempotency key',
      () =>
        app.request
          .post('/api/jobs')
          .set('Idempotency-Key', 'x'.repeat(300))
          .send({ service: 'attest.timestamp', input: { digest } }),
      400,
      'invalid_idempotency_key',
    ],
  ];
  for (const [name, send, status, code] of cases) {
    it(`${name} → ${status} ${code}`, async () => {
      const [jobs, events] = [await jobCount(), await eventCount()];
      expectProblem(await send(), status, code);
      expect(await jobCount()).toBe(jobs);
      expect(await eventCount()).toBe(events);
    });
  }

  it('names each invalid field', async () => {
    const res = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest: 'zz' } });
    expect(res.body.errors).toEqual([
      { path: 'input.digest', message: 'a SHA-256 digest: 64 hex characters' },
    ]);
  });
});

describe('Idempotency-Key', () => {
  it('replays the same response for the same key and body to the caller who made it', async () => {
    const agent = await registerAgent(app);
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-1') } };
    const first = await app.request
      .post('/api/jobs')
      .set(agent.auth)
      .set('Idempotency-Key', 'conventions-key-0001')
      .send(body)
      .expect(202);
    const second = await app.request
      .post('/api/jobs')
      .set(agent.auth)
      .set('Idempotency-Key', 'conventions-key-0001')
      .send(body)
      .expect(202);
    expect(second.body.job.id).toBe(first.body.job.id);
    expect(second.body.accessToken).toBe(first.body.accessToken);
    expect(second.headers['idempotency-replayed']).toBe('true');
    expect(await app.deps.db('jobs').where('id', first.body.job.id).count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('withholds a reply carrying a job token from an anonymous repeat: 409 with the Location only', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-anon') } };
    const first = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'conventions-key-anon')
      .send(body)
      .expect(202);
    const jobs = await jobCount();
    const second = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'conventions-key-anon')
      .send(body);
    expectProblem(second, 409, 'idempotency_reply_withheld');
    expect(second.headers.location).toBe(first.headers.location);
    expect(JSON.stringify(second.body)).not.toContain(first.body.accessToken);
    expect(await jobCount()).toBe(jobs);
  });

  it('answers 409 idempotency_conflict for the same key with another body, and writes nothing', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-2') } };
    await app.request.post('/api/jobs').set('Idempotency-Key', 'conventions-key-0002').send(body).expect(202);
    const jobs = await jobCount();
    const res = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'conventions-key-0002')
      .send({ ...body, input: { digest: await sha256Of('other') } });
    expectProblem(res, 409, 'idempotency_conflict');
    expect(await jobCount()).toBe(jobs);
  });

  it('creates one job when the same key races', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-race') } };
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        app.request.post('/api/jobs').set('Idempotency-Key', 'conventions-key-race').send(body),
      ),
    );
    const ids = new Set(results.filter((r) => r.status === 202).map((r) => r.body.job.id));
    expect(ids.size).toBe(1);
    // The others came while it ran, or after (an anonymous caller is not shown the token again).
    for (const r of results.filter((r) => r.status !== 202))
      expect(['idempotency_in_progress', 'idempotency_reply_withheld']).toContain(r.body.code);
    const digest = body.input.digest;
    expect(await app.deps.db('jobs').whereRaw(`input->>'digest' = ?`, [digest]).count({ n: '*' })).toEqual([
      { n: '1' },
    ]);
  });

  it('keeps keys apart per caller', async () => {
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-3') } };
    const a = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'conventions-key-0003')
      .send(body)
      .expect(202);
    const b = await app.request
      .post('/api/jobs')
      .set('Idempotency-Key', 'conventions-key-0003')
      .set('Authorization', 'Bearer op_test_token_0123456789')
      .send(body);
    // A different Authorization is a different scope: no replay across callers.
    expect(b.headers['idempotency-replayed']).toBeUndefined();
    if (b.status === 202) expect(b.body.job.id).not.toBe(a.body.job.id);
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After once the per-IP budget is spent', async () => {
    // Its own key prefix, so the counters start at zero.
    const limited = testApp({ rateLimit: { enabled: true, ipPerMinute: 3, keyPerMinute: 3 } });
    limited.deps.queues = new Queues(limited.deps.redis, `${limited.deps.queues.prefix}-rl`);
    expect(await waitReady(limited.deps.redis)).toBe(true);
    try {
      for (let i = 0; i < 3; i++) await limited.request.get('/api/pricing').expect(200);
      const res = await limited.request.get('/api/pricing');
      expectProblem(res, 429, 'rate_limited');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});

describe('operator routes and operational endpoints', () => {
  it('guards Bull Board with the operator token', async () => {
    const res = await app.request.get('/admin/queues');
    expectProblem(res, 401, 'unauthorized');
    expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    await app.request.get('/admin/queues').set('Authorization', 'Bearer wrong-token-xxxxxxxxxx').expect(401);
    await app.request
      .get('/admin/queues')
      .set('Authorization', 'Bearer op_test_token_0123456789')
      .expect(200);
    await app.request.get('/admin/queues').auth('operator', 'op_test_token_0123456789').expect(200);
  });

  it('serves Prometheus metrics with HTTP latency and queue depth', async () => {
    await app.request.get('/api/pricing').expect(200);
    const res = await app.request.get('/metrics').expect(200);
    expect(res.text).toContain('px_http_request_duration_seconds_bucket');
    expect(res.text).toMatch(/px_queue_jobs\{queue="jobs",state="waiting"\}/);
  });

  it('publishes OpenAPI 3.1.0 with the agent exchange operationIds and version 1.3.0', async () => {
    const res = await app.request.get('/openapi.json').expect(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.info.version).toBe('1.3.0');
    const ops = Object.values(
      res.body.paths as Record<string, Record<string, { operationId: string }>>,
    ).flatMap((p) => Object.values(p).map((o) => o.operationId));
    for (const id of ['health', 'services', 'pricing', 'createJob', 'jobStatus']) expect(ops).toContain(id);
    await app.request.get('/docs/').expect(200).expect('content-type', /html/);
    const platform = await app.request.get('/openapi/platform.json').expect(200);
    expect(platform.body.paths['/api/v1/readiness']).toBeDefined();
  });

  it('echoes a valid request id and makes one otherwise', async () => {
    const given = await app.request.get('/api/pricing').set('X-Request-Id', 'abc-123').expect(200);
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await app.request.get('/api/pricing').set('X-Request-Id', 'bad id with spaces').expect(200);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('logs one line per request, by outcome, naming the request and never its headers', async () => {
    const logs = captureLogs(logger);
    try {
      const secret = 'pk_live_never_in_logs';
      await app.request
        .get('/api/pricing')
        .set('X-Request-Id', 'ok-1')
        .set('Authorization', `Bearer ${secret}`)
        .expect(200);
      await app.request.get('/api/no-such-route').set('X-Request-Id', 'missing-1').expect(404);
      await new Promise((r) => setTimeout(r, 10));
      type Line = { msg?: string; level?: number; req?: { id?: string }; responseTime?: unknown };
      const lines = logs.lines.map((l) => JSON.parse(l) as Line);
      const line = (id: string) => lines.filter((l) => l.req?.id === id && l.msg === 'request completed');
      expect(line('ok-1')).toHaveLength(1);
      expect(line('ok-1')[0]).toMatchObject({
        level: 20,
        req: { id: 'ok-1', method: 'GET', url: '/api/pricing' },
        res: { statusCode: 200 },
      });
      expect(typeof line('ok-1')[0]!.responseTime).toBe('number');
      expect(line('missing-1')).toHaveLength(1);
      // A 4xx is the caller's: at debug, never at info, where it would fill npm start's terminal.
      expect(line('missing-1')[0]).toMatchObject({ level: 20, res: { statusCode: 404 } });
      await app.request.get('/favicon.ico').set('X-Request-Id', 'icon-1').expect(200);
      await app.request
        .get('/api/jobs/job_00000000000000000000000000')
        .set('X-Request-Id', 'gone-1')
        .expect(404);
      await new Promise((r) => setTimeout(r, 10));
      const atInfo = logs.lines
        .map((l) => JSON.parse(l) as Line)
        .filter((l) => (l.level ?? 0) >= 30 && ['missing-1', 'icon-1', 'gone-1'].includes(l.req?.id ?? ''));
      expect(atInfo).toEqual([]);
      for (const l of logs.lines) expect(l).not.toContain(secret);
    } finally {
      logs.stop();
    }
  });

  it('answers readiness with each check', async () => {
    const res = await app.request.get('/api/v1/readiness').expect(200);
    expect(res.body.ready).toBe(true);
    expect(Object.keys(res.body.checks)).toEqual(
      expect.arrayContaining(['db', 'redis', 'migrations', 'queues', 'receiptKey', 'logKey']),
    );
  });

  it('sends security headers and CORS on the public API', async () => {
    const res = await app.request.get('/api/services').set('Origin', 'https://agent.example').expect(200);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('stored idempotent responses', () => {
  it('keep neither the key nor the response readable in the database', async () => {
    const agent = await registerAgent(app);
    const body = { service: 'attest.timestamp', input: { digest: await sha256Of('idem-sealed') } };
    const first = await app.request
      .post('/api/jobs')
      .set(agent.auth)
      .set('Idempotency-Key', 'sealed-key-00000001')
      .send(body)
      .expect(202);
    const rows = await app.deps.db('idempotency_keys').select('*');
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain('sealed-key-00000001');
    expect(dump).not.toContain(first.body.job.id);
    expect(dump).not.toContain(first.body.accessToken);
    const replay = await app.request
      .post('/api/jobs')
      .set(agent.auth)
      .set('Idempotency-Key', 'sealed-key-00000001')
      .send(body)
      .expect(202);
    expect(replay.body).toEqual(first.body);
  });
});
