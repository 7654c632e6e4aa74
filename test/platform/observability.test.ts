// Metrics of every process type (web, worker, prover) parse and lint clean with promtool, behind the
// token; production refuses them without one; the alert rules check and pass their unit tests; every
// metric the dashboard and the rules name is served by some process.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UnrecoverableError } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../shared/platform/crypto';
import { parseEnv } from '../../shared/platform/env';
import { StartupFailure } from '../../shared/platform/failures';
import { metricsAccess, registry, startMetricsServer } from '../../shared/platform/metrics';
import { bearer, eventually, testApp, testQueueWorker, waitForJob } from '../helpers';
import type { TestApp } from '../helpers';
import { freePort } from '../ports';
import type { ProcessType } from '../processes';
import { processArgs } from '../processes';

const TOKEN = 'metrics-token-0123456789';
const PROMTOOL = 'promtool'; // Debian's prometheus package (.ci/run installs it)

let app: TestApp;
const children: ChildProcess[] = [];
/** The worker and prover that consume the queues (not the production worker, which must exit itself). */
const consumers: ChildProcess[] = [];
const scraped = new Map<'web' | 'worker' | 'prover', string>();

/**
 * A process type with its metrics listener on a port it picks itself (`port` 0): a port picked here and
 * freed for it could be taken by another file's server before the child binds it. Its port is what its
 * `metrics listening` log line says.
 */
function start(type: ProcessType, portVariable: string, extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, processArgs(type), {
    env: {
      ...process.env,
      METRICS_TOKEN: TOKEN,
      SWEEP_INTERVAL_MS: '60000',
      LOG_LEVEL: 'info',
      [portVariable]: '0',
      ...extra,
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(child);
  consumers.push(child);
  const port = new Promise<number>((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const m = /"port":(\d+)[^\n]*"msg":"metrics listening"/.exec(buffered);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${type} exited with ${code} before listening`)));
  });
  return port.then((p) => ({ port: p, child }));
}

const scrape = (port: number, auth?: string) =>
  fetch(`http://127.0.0.1:${port}/metrics`, auth ? { headers: { authorization: auth } } : {});

/** Waits for a spawned process's listener, then checks the token is needed. */
async function scrapeProcess(port: number, child: ChildProcess): Promise<string> {
  const text = await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode}`);
      const res = await scrape(port, `Bearer ${TOKEN}`).catch(() => undefined);
      return res?.status === 200 ? res.text() : false;
    },
    60_000,
    100,
  );
  expect((await scrape(port)).status).toBe(401);
  expect((await scrape(port, 'Bearer wrong-token-0123456789')).status).toBe(401);
  return text;
}

/** `promtool check metrics`: the exposition parses, and its names follow the Prometheus conventions. */
function promtoolCheckMetrics(text: string): string {
  const run = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return run.status === 0 ? '' : `${run.stdout}${run.stderr}`.trim() || `exit ${run.status}`;
}

/** The sample names each family of an exposition serves (a histogram's _bucket, _sum and _count). */
function servedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}

// Both process types start at once (each takes seconds to load); the tests below wait on their listeners.
let worker: Promise<{ port: number; child: ChildProcess }>;
let prover: Promise<{ port: number; child: ChildProcess }>;
let productionWorker: Promise<{ port: number; code: number | null; output: string }>;
beforeAll(() => {
  app = testApp({ metricsToken: TOKEN });
  worker = start('worker', 'WORKER_METRICS_PORT');
  prover = start('prover', 'PROVER_METRICS_PORT', { PROVER_CONCURRENCY: '1' });
  // Awaited by their tests, which say why one did not start.
  for (const p of [worker, prover]) p.catch(() => undefined);
  productionWorker = freePort().then((port) => {
    const child = spawn(process.execPath, processArgs('worker'), {
      env: {
        ...process.env,
        // A production setup complete but for the metrics token; refusals exit rather than throw.
        VITEST: '',
        NODE_ENV: 'production',
        BASE_URL: 'https://exchange.example',
        SERVICE_SIGNING_KEY: '7'.repeat(64),
        LOG_SIGNING_KEY: '8'.repeat(64),
        METRICS_TOKEN: '',
        WORKER_METRICS_PORT: String(port),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    return new Promise((r) => child.once('exit', (code) => r({ port, code, output })));
  });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await app.close();
});

describe('metrics of every process type', () => {
  it('web: served behind the token, parsed and linted by promtool', async () => {
    await app.request.get('/api/pricing').expect(200);
    expect((await app.request.get('/metrics')).status).toBe(401);
    const res = await app.request.get('/metrics').set(bearer(TOKEN)).expect(200);
    expect(res.text).toMatch(/^px_queue_jobs\{queue="proofs",state="waiting"\} \d+$/m);
    expect(promtoolCheckMetrics(res.text)).toBe('');
    scraped.set('web', res.text);
  });

  it('web: each request is counted under its full route, the A2A transports’ mount paths included', async () => {
    const rpc = { jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'job_missing' } };
    const someToken = `Bearer jt_${'A'.repeat(43)}`;
    await app.request
      .post('/a2a/jsonrpc')
      .set({ 'A2A-Version': '1.0', Authorization: someToken })
      .send(rpc)
      .expect(200);
    await app.request
      .get('/a2a/rest/tasks/job_missing')
      .set({ 'A2A-Version': '1.0', Authorization: someToken })
      .expect(404);
    await app.request.get('/api/pricing').expect(200);
    const text = (await app.request.get('/metrics').set(bearer(TOKEN)).expect(200)).text;
    const routes = new Set(
      [...text.matchAll(/^px_http_request_duration_seconds_count\{[^}]*route="([^"]*)"/gm)].map((m) => m[1]),
    );
    expect(routes, [...routes].join(' ')).toContain('/a2a/jsonrpc');
    expect(routes, [...routes].join(' ')).toContain('/a2a/rest/tasks/:taskId');
    expect(routes).toContain('/api/pricing');
    // No request is counted under a mount's own part alone, or under a path holding an id.
    expect(routes).not.toContain('/');
    expect([...routes].filter((r) => r?.includes('job_missing'))).toEqual([]);
  });

  it('worker: its own listener, with the wait and outcome of the jobs it ran', async () => {
    const { port, child } = await worker;
    await scrapeProcess(port, child);
    const created = await app.request
      .post('/api/jobs')
      .send({ service: 'attest.timestamp', input: { digest: sha256Hex('observed') } })
      .expect(202);
    const job = await waitForJob(
      app.request,
      created.body.job.id as string,
      created.body.accessToken as string,
    );
    expect(job.status).toBe('succeeded');
    const text = await eventually(async () => {
      const t = await (await scrape(port, `Bearer ${TOKEN}`)).text();
      return /^px_job_wait_seconds_count\{queue="jobs"\} [1-9]/m.test(t) ? t : false;
    });
    expect(text).toMatch(/^px_jobs_processed_total\{queue="jobs",outcome="succeeded"\} [1-9]/m);
    expect(text).toContain('# TYPE px_jobs_stalled_total counter');
    expect(promtoolCheckMetrics(text)).toBe('');
    scraped.set('worker', text);
    // Done with it: the tests below run their own workers on the same queues.
    child.kill('SIGKILL');
  }, 90_000);

  it('prover: its own listener on PROVER_METRICS_PORT, with the proof time histogram', async () => {
    const { port, child } = await prover;
    const text = await scrapeProcess(port, child);
    expect(text).toContain('# TYPE px_proof_duration_seconds histogram');
    expect(promtoolCheckMetrics(text)).toBe('');
    scraped.set('prover', text);
    child.kill('SIGKILL');
  }, 90_000);

  it('promtool itself refuses a malformed or misnamed exposition (the check can fail)', () => {
    expect(promtoolCheckMetrics('# TYPE px_things counter\npx_things 1\n')).toMatch(/_total/);
    expect(promtoolCheckMetrics('px_broken{ 1\n')).not.toBe('');
  });
});

describe('job metrics of the worker pool', () => {
  // The processes above consume the same queues: they are gone before these tests run their own workers.
  // Only those: the production worker is left to refuse and exit by itself (killing it while it was
  // still loading was what made its test see an exit by signal instead of its refusal).
  beforeAll(async () => {
    await Promise.all(
      consumers
        .filter((c) => c.exitCode === null && c.signalCode === null)
        .map((c) => new Promise((r) => (c.once('exit', r), c.kill('SIGKILL')))),
    );
  });

  const value = async (name: string, labels: Record<string, string>) => {
    const metric = await registry.getSingleMetric(name)!.get();
    const match = metric.values.find((v) =>
      Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
    );
    return match?.value ?? 0;
  };

  it('counts a job found without a live worker as stalled', async () => {
    // A worker that takes the job and then dies without a word (its lock is never renewed again).
    let taken!: () => void;
    const tookIt = new Promise<void>((r) => (taken = r));
    const doomed = testQueueWorker('jobs', () => () => (taken(), new Promise<never>(() => undefined)), {
      lockDurationMs: 1000,
    });
    await app.deps.queues.enqueue('jobs', { jobId: 'job_stalled1' });
    await tookIt;
    await doomed.worker.close(true);
    const before = await value('px_jobs_stalled_total', { queue: 'jobs' });
    const next = testQueueWorker('jobs', () => async () => 'ran', { lockDurationMs: 1000 });
    try {
      await eventually(async () => (await value('px_jobs_stalled_total', { queue: 'jobs' })) > before);
    } finally {
      await next.close();
      await doomed.close();
    }
  });

  it('counts failed attempts, telling the last one (final) from those retried', async () => {
    const worker = testQueueWorker('checkouts', () => async (job) => {
      if (job.attemptsMade === 0) throw new Error('first attempt fails');
      throw new UnrecoverableError('second attempt can never succeed');
    });
    const retried = await value('px_job_attempts_failed_total', { queue: 'checkouts', final: 'false' });
    const final = await value('px_job_attempts_failed_total', { queue: 'checkouts', final: 'true' });
    try {
      await app.deps.queues.enqueue('checkouts', { checkoutId: 'chk_failing1' });
      await eventually(
        async () =>
          (await value('px_job_attempts_failed_total', { queue: 'checkouts', final: 'true' })) === final + 1,
      );
      expect(await value('px_job_attempts_failed_total', { queue: 'checkouts', final: 'false' })).toBe(
        retried + 1,
      );
    } finally {
      await worker.close();
    }
  });
});

describe('who may read metrics', () => {
  it('in production: only with METRICS_TOKEN, or when METRICS_PUBLIC says anyone may', () => {
    const prod = { NODE_ENV: 'production' as const, METRICS_PUBLIC: false };
    expect(metricsAccess(prod)).toHaveProperty('refused');
    expect(metricsAccess({ ...prod, NODE_ENV: 'development', APP_ENV: 'production' })).toHaveProperty(
      'refused',
    );
    expect(metricsAccess({ ...prod, METRICS_TOKEN: TOKEN })).toEqual({ token: TOKEN });
    expect(metricsAccess({ ...prod, METRICS_PUBLIC: true })).toEqual({ open: true });
    expect(metricsAccess({ NODE_ENV: 'development', METRICS_PUBLIC: false })).toEqual({ open: true });
    expect(parseEnv({ METRICS_PUBLIC: 'true' }).METRICS_PUBLIC).toBe(true);
    expect(parseEnv({}).METRICS_PUBLIC).toBe(false);
  });

  it('a worker or prover listener does not start in production without the token', () => {
    const access = metricsAccess({ NODE_ENV: 'production', METRICS_PUBLIC: false });
    expect(() => startMetricsServer({ port: 0, host: '127.0.0.1', access })).toThrow(StartupFailure);
    expect(() => startMetricsServer({ port: 0, host: '127.0.0.1', access })).toThrow(/METRICS_TOKEN/);
  });

  it('a production worker asked for a metrics port without the token stops, saying what to set', async () => {
    const { port, code, output } = await productionWorker;
    expect(code).toBe(78);
    expect(output).toBe(
      'Refusing to start in production: METRICS_TOKEN is not set while WORKER_METRICS_PORT is; set it to a random string of 16 or more characters (scrapers send it as a Bearer token), or METRICS_PUBLIC=true when only the scraper can reach the port\n',
    );
    expect(await scrape(port).catch(() => 'unreachable')).toBe('unreachable');
  }, 60_000);

  it('the web refuses /metrics in production without the token, whatever the caller sends', async () => {
    const access = metricsAccess({ NODE_ENV: 'production', METRICS_PUBLIC: false });
    const refused = testApp({
      metricsToken: undefined,
      metricsRefused: (access as { refused: string }).refused,
    });
    try {
      for (const auth of [undefined, `Bearer ${TOKEN}`, 'Bearer anything-at-all-0123']) {
        const req = refused.request.get('/metrics');
        const res = await (auth ? req.set('Authorization', auth) : req);
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.text).not.toContain('px_');
        expect(res.body.detail).toMatch(/METRICS_TOKEN/);
      }
    } finally {
      await refused.close();
    }
  });
});

describe('alert rules and dashboard', () => {
  const rules = 'ops/prometheus/alerts.yml';
  const dashboard = JSON.parse(readFileSync('ops/grafana/proof-exchange.json', 'utf8')) as {
    panels: Array<{ title: string; type: string; targets?: Array<{ expr: string }> }>;
  };
  const panelExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));

  it('promtool checks the rules and passes their unit tests', () => {
    const check = spawnSync(PROMTOOL, ['check', 'rules', rules], { encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`).toMatch(/SUCCESS: \d+ rules found/);
    expect(check.status).toBe(0);
    const unit = spawnSync(PROMTOOL, ['test', 'rules', 'ops/prometheus/alerts.test.yml'], {
      encoding: 'utf8',
    });
    expect(`${unit.stdout}${unit.stderr}`).toMatch(/SUCCESS/);
    expect(unit.status).toBe(0);
  });

  it('the scrape configuration of docs/observability.md loads in Prometheus with the alert rules', () => {
    const doc = readFileSync('docs/observability.md', 'utf8');
    const block = /A Prometheus scrape configuration[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block, 'the scrape configuration block').toBeDefined();
    // One job per process type, each named as the target-down alert expects.
    const jobs = [...block!.matchAll(/job_name: (\S+)/g)].map((m) => m[1]);
    expect(jobs).toEqual(['proof-exchange-web', 'proof-exchange-worker', 'proof-exchange-prover']);
    expect(readFileSync(rules, 'utf8')).toContain('up{job=~"proof-exchange-.*"}');
    const dir = mkdtempSync(join(tmpdir(), 'px-prom-'));
    try {
      // The token file the configuration names, where this test can write it.
      const tokenFile = join(dir, 'px-metrics-token');
      writeFileSync(tokenFile, TOKEN);
      const config = join(dir, 'prometheus.yml');
      writeFileSync(
        config,
        `rule_files: [${JSON.stringify(join(process.cwd(), rules))}]\n${block!.replaceAll('/etc/prometheus/px-metrics-token', tokenFile)}`,
      );
      const check = spawnSync(PROMTOOL, ['check', 'config', config], { encoding: 'utf8' });
      expect(`${check.stdout}${check.stderr}`).toMatch(/SUCCESS: \d+ rules found/);
      expect(check.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every dashboard query parses as PromQL', () => {
    expect(panelExprs.length).toBeGreaterThan(10);
    const dir = mkdtempSync(join(tmpdir(), 'px-dash-'));
    try {
      const file = join(dir, 'dashboard.rules.yml');
      const lines = ['groups:', '  - name: dashboard', '    rules:'];
      panelExprs.forEach((expr, i) => {
        const promql = expr.replaceAll('$__rate_interval', '5m').replaceAll('$queue', '.*');
        lines.push(`      - record: dashboard:panel_${i}`, `        expr: ${JSON.stringify(promql)}`);
      });
      writeFileSync(file, `${lines.join('\n')}\n`);
      const check = spawnSync(PROMTOOL, ['check', 'rules', file], { encoding: 'utf8' });
      expect(`${check.stdout}${check.stderr}`).toContain(`SUCCESS: ${panelExprs.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names only metrics some process serves', () => {
    expect([...scraped.keys()].sort()).toEqual(['prover', 'web', 'worker']);
    const served = new Set([...scraped.values()].flatMap((t) => [...servedNames(t)]));
    const ruleText = readFileSync(rules, 'utf8');
    const named = (text: string) => [...text.matchAll(/\b(px_[a-z0-9_]+)/g)].map((m) => m[1]!);
    const wanted = new Set([...panelExprs.flatMap(named), ...named(ruleText)]);
    for (const family of [
      'px_queue_jobs',
      'px_job_wait_seconds_bucket',
      'px_jobs_processed_total',
      'px_job_attempts_failed_total',
      'px_jobs_stalled_total',
      'px_proof_duration_seconds_bucket',
    ])
      expect(wanted, `the dashboard and rules use ${family}`).toContain(family);
    expect([...wanted].filter((n) => !served.has(n))).toEqual([]);
    // Besides its own, the rules use only `up`, which Prometheus writes for each target.
    expect(ruleText.match(/\bup\{/g)?.length).toBe(1);
  });
});
