// Prometheus metrics: one registry per process; web exports HTTP and queue metrics, the worker and the
// prover their jobs' (docs/observability.md lists them). Who may read them is decided here, once.
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { safeEqual } from './crypto';
import { isProduction } from './env';
import type { Env } from './env';
import { StartupFailure, explainListenError } from './failures';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'px_' });
// prom-client names three of its gauges `_total`, which Prometheus keeps for counters (promtool's lint
// says so); the same counts stay in px_nodejs_active_resources, by type.
for (const name of ['handles', 'requests', 'resources'])
  registry.removeSingleMetric(`px_nodejs_active_${name}_total`);

export const httpDuration = new Histogram({
  name: 'px_http_request_duration_seconds',
  help: 'HTTP request latency by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const httpShed = new Counter({
  name: 'px_http_shed_total',
  help: 'Requests the overload gate refused (503 overloaded; slow_body: 408), by the signal that shed them',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const offloadTasks = new Counter({
  name: 'px_verify_pool_tasks_total',
  help: 'Checks the web ran in its verify pool (off the event loop), by task and outcome',
  labelNames: ['task', 'outcome'] as const,
  registers: [registry],
});

export const queueDepth = new Gauge({
  name: 'px_queue_jobs',
  help: 'BullMQ jobs by queue and state, read at scrape time',
  labelNames: ['queue', 'state'] as const,
  registers: [registry],
});

export const jobDuration = new Histogram({
  name: 'px_job_duration_seconds',
  help: 'Time a processor spent on a job, by queue and outcome',
  labelNames: ['queue', 'outcome'] as const,
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [registry],
});

export const jobsProcessed = new Counter({
  name: 'px_jobs_processed_total',
  help: 'Jobs processed, by queue and outcome',
  labelNames: ['queue', 'outcome'] as const,
  registers: [registry],
});

/** Seconds from a job's enqueue (after any delay it was added with) until a worker first took it up. */
export const jobWait = new Histogram({
  name: 'px_job_wait_seconds',
  help: 'Time a job waited in its queue before a worker first took it up, by queue',
  labelNames: ['queue'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
  registers: [registry],
});

export const jobsFailed = new Counter({
  name: 'px_job_attempts_failed_total',
  help: 'Job attempts that ended in an error, by queue and whether the job failed for good (final)',
  labelNames: ['queue', 'final'] as const,
  registers: [registry],
});

export const jobsStalled = new Counter({
  name: 'px_jobs_stalled_total',
  help: 'Jobs found active without a live worker (worker killed or cut off) and handed back, by queue',
  labelNames: ['queue'] as const,
  registers: [registry],
});

export const proofDuration = new Histogram({
  name: 'px_proof_duration_seconds',
  help: 'Time the prover spent on one proof attempt, by proof kind and outcome',
  labelNames: ['kind', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
  registers: [registry],
});

export const chainRpcRequests = new Counter({
  name: 'px_chain_rpc_requests_total',
  help: 'HTTP requests sent to chain JSON-RPC endpoints, by kind (single call or batch)',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const chainRpcCalls = new Counter({
  name: 'px_chain_rpc_calls_total',
  help: 'JSON-RPC calls sent to chain endpoints, counted one by one whether batched or not',
  registers: [registry],
});

export const witnessLag = new Gauge({
  name: 'px_log_witness_lag_leaves',
  help: 'Leaves between the log’s latest checkpoint and the size each witness last cosigned',
  labelNames: ['witness'] as const,
  registers: [registry],
});

export const witnessRequests = new Counter({
  name: 'px_log_witness_requests_total',
  help: 'add-checkpoint requests to the log’s witnesses, by witness and outcome (cosigned, conflict, failed)',
  labelNames: ['witness', 'outcome'] as const,
  registers: [registry],
});

/** Who may read a process's metrics: holders of the token, anyone (told so), or nobody. */
export type MetricsAccess = { token: string } | { open: true } | { refused: string };

/**
 * Metrics say how busy the service is, which queues back up, how long proofs take: in production they
 * need METRICS_TOKEN, or METRICS_PUBLIC=true where only the scraper reaches the listener.
 */
export function metricsAccess(
  e: Pick<Env, 'METRICS_TOKEN' | 'METRICS_PUBLIC'> & Parameters<typeof isProduction>[0],
): MetricsAccess {
  if (e.METRICS_TOKEN) return { token: e.METRICS_TOKEN };
  if (!isProduction(e) || e.METRICS_PUBLIC) return { open: true };
  return {
    refused:
      'metrics are refused in production without METRICS_TOKEN: set METRICS_TOKEN (scrapers send it as a Bearer token), or METRICS_PUBLIC=true when only the scraper can reach them',
  };
}

/** Stops a process's start when its metrics listener would be refused (checked before anything opens). */
export function assertMetricsAllowed(access: MetricsAccess): void {
  if ('refused' in access)
    throw new StartupFailure(
      'metrics would be readable by anyone in production (no METRICS_TOKEN)',
      'set METRICS_TOKEN (at least 16 characters), or METRICS_PUBLIC=true when only the scraper can reach the metrics port',
    );
}

/**
 * A process's own /metrics listener (the worker's, the prover's): on `host` (loopback unless the
 * operator says otherwise), and behind the token as a Bearer credential when one is configured. A
 * process whose metrics would be readable by anyone in production does not start it.
 */
export function startMetricsServer(opts: { port: number; host: string; access: MetricsAccess }): http.Server {
  const { access } = opts;
  assertMetricsAllowed(access);
  return http
    .createServer(async (req, res) => {
      if ('token' in access) {
        const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (!safeEqual(given, access.token)) {
          res.writeHead(401, { 'WWW-Authenticate': 'Bearer', 'Content-Type': 'text/plain' });
          res.end('metrics need Authorization: Bearer <METRICS_TOKEN>\n');
          return;
        }
      }
      res.setHeader('Content-Type', registry.contentType);
      res.end(await registry.metrics());
    })
    .listen(opts.port, opts.host);
}

/** Starts the listener and waits until it listens; a taken port is explained with the variable to change. */
export async function listenMetrics(opts: {
  port: number;
  host: string;
  access: MetricsAccess;
  variable: string;
}): Promise<http.Server> {
  const server = startMetricsServer(opts);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err) => reject(explainListenError(err, opts) ?? err));
  });
  return server;
}
