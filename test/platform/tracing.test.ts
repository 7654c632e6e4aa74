// One trace follows a request: the web's server span, its Postgres queries, the BullMQ producer span of
// the job it queues and the worker's (or the prover's) processor span with its queries, under one trace
// id; exported as OTLP JSON over HTTP.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import express from 'express';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpTracing } from '../../api/http/tracing';
import { sha256Hex } from '../../shared/platform/crypto';
import {
  otlpExporter,
  queueTelemetry,
  startTracing,
  stopTracing,
  tracesUrl,
  tracingOn,
} from '../../shared/platform/tracing';
import { eventually, testApp, testJobsWorker } from '../helpers';
import { privateInputs, secretValues, testProofsWorker } from '../zk/helpers';
import type { TestApp, TestWorker } from '../helpers';

const memory = new InMemorySpanExporter();
let app: TestApp;
let worker: TestWorker;

beforeAll(() => {
  // Off by default: nothing configured, nothing registered.
  expect(startTracing('test', { e: {} })).toBe(false);
  expect(tracingOn()).toBe(false);
  expect(queueTelemetry()).toBeUndefined();
  expect(startTracing('test', { exporter: memory })).toBe(true);
  // Stores opened after tracing started, as each process type opens them.
  app = testApp();
  worker = testJobsWorker();
});
afterAll(async () => {
  await worker.close();
  await app.close();
  await stopTracing();
});

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('a trace from the request to the worker', () => {
  it('puts the HTTP span, the queries, the enqueue and the processing under one trace id', async () => {
    const created = await app.request
      .post('/api/jobs')
      .set('X-Request-Id', 'trace-test')
      // A caller's traceparent is not continued: the request starts a trace of its own.
      .set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')
      .send({ service: 'attest.timestamp', input: { digest: sha256Hex('traced') } })
      .expect(202);
    const jobId = (created.body.job?.id ?? created.body.id) as string;
    expect(jobId).toMatch(/^job_/);

    const spans = await eventually(async () => {
      const all = memory.getFinishedSpans();
      const server = all.find((s) => s.kind === SpanKind.SERVER && s.name === 'POST /api/jobs');
      if (!server) return false;
      const trace = all.filter((s) => s.spanContext().traceId === server.spanContext().traceId);
      return trace.some((s) => s.kind === SpanKind.CONSUMER) ? { server, trace } : false;
    });
    const { server, trace } = spans;
    expect(server.spanContext().traceId).not.toBe('0af7651916cd43dd8448eb211c80319c');
    expect(parentOf(server)).toBeUndefined();
    expect(server.attributes['http.route']).toBe('/api/jobs');
    expect(server.attributes['http.response.status_code']).toBe(202);

    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const descendsFrom = (s: ReadableSpan, root: ReadableSpan): boolean => {
      for (let p = parentOf(s); p; p = parentOf(byId.get(p)!)) {
        if (p === root.spanContext().spanId) return true;
        if (!byId.has(p)) return false;
      }
      return false;
    };
    // The web's writes, as query spans under the request.
    const webInsert = trace.find(
      (s) => s.name.startsWith('pg ') && String(s.attributes['db.query.text']).includes('insert into jobs'),
    );
    expect(webInsert, 'the insert of the job row').toBeDefined();
    expect(descendsFrom(webInsert!, server)).toBe(true);
    // Bound values never reach a span: the statement keeps its placeholders.
    expect(JSON.stringify(trace.map((s) => s.attributes))).not.toContain(sha256Hex('traced'));
    // BullMQ's producer span under the request, the processor span under the producer (across Redis).
    const producer = trace.find((s) => s.kind === SpanKind.PRODUCER && s.name.includes('jobs'));
    expect(producer, 'the enqueue').toBeDefined();
    expect(descendsFrom(producer!, server)).toBe(true);
    const consumer = trace.find((s) => s.kind === SpanKind.CONSUMER && s.name.includes('jobs'));
    expect(consumer, 'the processing').toBeDefined();
    expect(descendsFrom(consumer!, producer!)).toBe(true);
    // And the worker's own queries under its processing span.
    await eventually(async () =>
      memory
        .getFinishedSpans()
        .some((s) => s.name.startsWith('pg ') && descendsFrom(s, consumer!) && s !== consumer),
    ).catch(() => {
      throw new Error('no query span under the processing span');
    });
    const rows = await worker.db('jobs').where({ id: jobId }).first();
    expect(rows).toBeDefined();
  });

  it('follows a proof request through the proofs queue into the prover, its queries and nothing private', async () => {
    const prover = testProofsWorker(1);
    try {
      const created = await app.request
        .post('/api/proof-workflows/blind-policy/prove')
        .send({ policy: 'threshold', inputs: privateInputs.threshold })
        .expect(202);
      const proofId = created.body.proof.id as string;
      const found = await eventually(async () => {
        const all = memory.getFinishedSpans();
        const server = all.find(
          (s) => s.kind === SpanKind.SERVER && s.name === 'POST /api/proof-workflows/blind-policy/prove',
        );
        if (!server) return false;
        const trace = all.filter((s) => s.spanContext().traceId === server.spanContext().traceId);
        const consumer = trace.find((s) => s.kind === SpanKind.CONSUMER && s.name.includes('proofs'));
        return consumer ? { server, consumer, trace } : false;
      }, 60_000);
      const { server, consumer } = found;
      const byId = new Map(memory.getFinishedSpans().map((s) => [s.spanContext().spanId, s]));
      const descendsFrom = (s: ReadableSpan, root: ReadableSpan): boolean => {
        for (let p = parentOf(s); p; p = parentOf(byId.get(p)!)) {
          if (p === root.spanContext().spanId) return true;
          if (!byId.has(p)) return false;
        }
        return false;
      };
      const producer = found.trace.find((s) => s.kind === SpanKind.PRODUCER && s.name.includes('proofs'));
      expect(producer, 'the enqueue of the proof').toBeDefined();
      expect(descendsFrom(producer!, server)).toBe(true);
      expect(descendsFrom(consumer, producer!)).toBe(true);
      // The prover's own queries (the proof's row read and written) under its processing span.
      const proverQueries = memory
        .getFinishedSpans()
        .filter((s) => s.name.startsWith('pg ') && descendsFrom(s, consumer));
      expect(proverQueries.length).toBeGreaterThan(0);
      // No private input reaches any span of the trace.
      const text = JSON.stringify(
        memory
          .getFinishedSpans()
          .filter((s) => s.spanContext().traceId === server.spanContext().traceId)
          .map((s) => [s.name, s.attributes, s.events]),
      );
      for (const secret of secretValues('threshold')) expect(text).not.toContain(secret);
      expect(proofId).toMatch(/^prf_/);
    } finally {
      await prover.close();
    }
  }, 90_000);

  it('names no route on the span of a sealed action (a ballot, a bid), as the metrics count none', async () => {
    const mini = express();
    mini.use(httpTracing());
    mini.post('/api/rooms/:id/ballots', (_req, res) => {
      res.locals.sealed = true;
      res.status(202).json({ ok: true });
    });
    mini.get('/api/rooms/:id', (_req, res) => {
      res.json({ ok: true });
    });
    await supertest(mini).post('/api/rooms/r1/ballots').expect(202);
    await supertest(mini).get('/api/rooms/r1').expect(200);
    const servers = memory.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
    const sealed = servers.find((s) => s.name === 'POST')!;
    expect(sealed, 'the sealed request has a span of its method only').toBeDefined();
    expect(sealed.attributes['http.route']).toBeUndefined();
    expect(JSON.stringify(servers.map((s) => [s.name, s.attributes]))).not.toContain('ballots');
    expect(servers.some((s) => s.attributes['http.route'] === '/api/rooms/:id')).toBe(true);
  });

  it('exports spans as OTLP JSON to the configured endpoint', async () => {
    const received: Array<{ path: string; type: string; key: unknown; body: string }> = [];
    const receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({
          path: req.url ?? '',
          type: req.headers['content-type'] ?? '',
          key: req.headers['x-collector-key'],
          body,
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
      expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: base })).toBe(`${base}/v1/traces`);
      expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: base, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
      expect(tracesUrl({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe('http://localhost:4318/v1/traces');
      expect(tracesUrl({})).toBeUndefined();
      const exporter = otlpExporter({
        OTEL_EXPORTER_OTLP_ENDPOINT: base,
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%201',
      })!;
      const spans = memory.getFinishedSpans();
      expect(spans.length).toBeGreaterThan(0);
      const result = await new Promise<{ code: number }>((r) => exporter.export(spans, r));
      expect(result.code).toBe(0);
      await exporter.shutdown();
      expect(received).toHaveLength(1);
      expect(received[0]!.path).toBe('/v1/traces');
      expect(received[0]!.type).toMatch(/^application\/json/);
      expect(received[0]!.key).toBe('k 1');
      const sent = JSON.parse(received[0]!.body) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ traceId: string }> }> }>;
      };
      const ids = sent.resourceSpans.flatMap((r) =>
        r.scopeSpans.flatMap((s) => s.spans.map((x) => x.traceId)),
      );
      expect(ids).toContain(spans[0]!.spanContext().traceId);
    } finally {
      await new Promise((r) => receiver.close(r));
    }
  });
});
