// OpenTelemetry traces, set up here and nowhere else. On when an OTLP endpoint (or OTEL_TRACES_EXPORTER=otlp)
// is configured; otherwise nothing is registered and every helper below returns at once.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import { createRequire } from 'node:module';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type * as SdkTraceBase from '@opentelemetry/sdk-trace-base';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type * as SdkTraceNode from '@opentelemetry/sdk-trace-node';
import type { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type * as SemanticConventions from '@opentelemetry/semantic-conventions';
import type { Telemetry } from 'bullmq';
import type * as BullmqOtel from 'bullmq-otel';
import type { BullMQOtel } from 'bullmq-otel';
import type { Knex } from 'knex';
import { env } from './env';
import type { Env } from './env';
import { logger } from './log';

const TRACER = 'proof-exchange';

// The SDK (provider, exporter, processors) loads only in a process whose traces are on: a process with
// them off, most of them, never reads its few hundred files.
const load = createRequire(import.meta.url);
const sdk = () => ({
  ...(load('@opentelemetry/sdk-trace-node') as typeof SdkTraceNode),
  ...(load('@opentelemetry/sdk-trace-base') as typeof SdkTraceBase),
  ...(load('@opentelemetry/resources') as typeof Resources),
  ...(load('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp),
  ...(load('@opentelemetry/semantic-conventions') as typeof SemanticConventions),
  ...(load('bullmq-otel') as typeof BullmqOtel),
});

type TracingEnv = Pick<
  Env,
  | 'OTEL_EXPORTER_OTLP_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  | 'OTEL_EXPORTER_OTLP_HEADERS'
  | 'OTEL_TRACES_EXPORTER'
  | 'OTEL_SERVICE_NAME'
>;

/** Where spans are posted, or undefined when traces are off. */
export function tracesUrl(e: TracingEnv): string | undefined {
  if (e.OTEL_TRACES_EXPORTER === 'none') return undefined;
  if (e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const base =
    e.OTEL_EXPORTER_OTLP_ENDPOINT ?? (e.OTEL_TRACES_EXPORTER === 'otlp' ? 'http://localhost:4318' : '');
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined;
}

/** A percent-encoded part of OTEL_EXPORTER_OTLP_HEADERS; a malformed escape is kept as written. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text.trim());
  } catch {
    return text.trim();
  }
}

function parseHeaders(spec: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (spec ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[decoded(pair.slice(0, at))] = decoded(pair.slice(at + 1));
  }
  return headers;
}

/** The OTLP/HTTP exporter (JSON over HTTP) the settings ask for, or undefined when traces are off. */
export function otlpExporter(e: TracingEnv): SpanExporter | undefined {
  const url = tracesUrl(e);
  if (!url) return undefined;
  return new (sdk().OTLPTraceExporter)({ url, headers: parseHeaders(e.OTEL_EXPORTER_OTLP_HEADERS) });
}

let provider: NodeTracerProvider | undefined;
let telemetry: BullMQOtel | undefined;

/**
 * Starts this process's tracer provider (once): the global tracer, the async context that carries a
 * span across awaits, and W3C trace context for BullMQ to put on each job. `exporter` replaces the
 * configured OTLP one (tests); with neither, traces stay off and this returns false.
 */
export function startTracing(
  processType: string,
  opts: { exporter?: SpanExporter; e?: TracingEnv } = {},
): boolean {
  if (provider) return true;
  const e = opts.e ?? env;
  const exporter = opts.exporter ?? otlpExporter(e);
  if (!exporter) return false;
  const {
    ATTR_SERVICE_NAME,
    BatchSpanProcessor,
    BullMQOtel,
    NodeTracerProvider,
    SimpleSpanProcessor,
    resourceFromAttributes,
  } = sdk();
  provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: e.OTEL_SERVICE_NAME ?? `proof-exchange-${processType}`,
    }),
    // Given an exporter (a test's), each span is handed over as it ends; the OTLP one gets batches.
    spanProcessors: [opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)],
  });
  provider.register();
  telemetry = new BullMQOtel({ tracerName: TRACER });
  // The collector's origin only: a path or user part of the address may carry a credential.
  const url = opts.exporter ? undefined : tracesUrl(e);
  logger.info({ processType, collector: url ? new URL(url).origin : 'in process' }, 'traces on');
  return true;
}

/** Flushes the spans still buffered and unregisters the globals; for the shutdown registry. */
export async function stopTracing(): Promise<void> {
  const p = provider;
  if (!p) return;
  provider = undefined;
  telemetry = undefined;
  try {
    await p.forceFlush();
    await p.shutdown();
  } finally {
    trace.disable();
    context.disable();
    propagation.disable();
  }
}

export const tracingOn = (): boolean => provider !== undefined;

/** BullMQ's `telemetry` option for queues and workers: producer and processor spans, linked by the job. */
export const queueTelemetry = (): Telemetry | undefined => telemetry;

export const tracer = (): Tracer => trace.getTracer(TRACER);

/**
 * A server span for one inbound request, started as a new trace: a caller's `traceparent` is not
 * continued, as callers are outside the service and would otherwise choose our trace ids and sampling.
 * Returns the context to run the request in.
 */
export function startServerSpan(name: string, attributes: Attributes): { span: Span; ctx: Context } {
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes, root: true }, ROOT_CONTEXT);
  return { span, ctx: trace.setSpan(ROOT_CONTEXT, span) };
}

/** Runs fn inside a span (a domain write, a proof); when traces are off it only runs fn. */
export async function traced<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!provider) return fn();
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

type QueryEvent = { __knexQueryUid?: string; sql?: string; method?: string };

/**
 * A client span per Postgres query, as a child of whatever span is active where the query was made.
 * The statement is recorded with its placeholders, never its bound values (inputs, hashes, keys).
 */
export function traceQueries(db: Knex): void {
  if (!provider) return;
  const open = new Map<string, Span>();
  const end = (q: QueryEvent, err?: Error) => {
    const span = q.__knexQueryUid ? open.get(q.__knexQueryUid) : undefined;
    if (!span) return;
    open.delete(q.__knexQueryUid!);
    if (err) span.setStatus({ code: SpanStatusCode.ERROR, message: err.name });
    span.end();
  };
  db.on('query', (q: QueryEvent) => {
    if (!q.__knexQueryUid || !provider) return;
    const sql = q.sql ?? '';
    // A raw statement is named by its first keyword (select, with, insert, ...).
    const operation = (q.method && q.method !== 'raw' ? q.method : (/^\s*(\w+)/.exec(sql)?.[1] ?? 'query'))
      .toLowerCase()
      .slice(0, 20);
    open.set(
      q.__knexQueryUid,
      tracer().startSpan(`pg ${operation}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': 'postgresql',
          'db.operation.name': operation,
          'db.query.text': sql.slice(0, 2000),
        },
      }),
    );
  });
  db.on('query-response', (_resp: unknown, q: QueryEvent) => end(q));
  db.on('query-error', (err: Error, q: QueryEvent) => end(q, err));
}
