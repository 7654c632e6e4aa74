// Prometheus metrics: one registry per process; web exports HTTP and queue metrics, workers job metrics.
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { safeEqual } from './crypto';

export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'px_' });

export const httpDuration = new Histogram({
  name: 'px_http_request_duration_seconds',
  help: 'HTTP request latency by route and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
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

/**
 * A process's own /metrics listener (the worker's): on `host` (loopback unless the operator says
 * otherwise), and behind `token` as a Bearer credential when one is configured.
 */
export function startMetricsServer(opts: {
  port: number;
  host: string;
  token?: string | undefined;
}): http.Server {
  return http
    .createServer(async (req, res) => {
      if (opts.token) {
        const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
        if (!safeEqual(given, opts.token)) {
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
