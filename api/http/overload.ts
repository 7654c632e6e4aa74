// Load shedding: past what the web process can serve, a request is answered 503 `overloaded` with
// Retry-After at once, rather than queued without bound (each queued request adds its wait to every
// later one, and its memory, until nothing is answered in time). Three signals, any sheds:
// * requests in flight: taken and not yet answered, past OVERLOAD_MAX_IN_FLIGHT;
// * the time taken requests spend in the process: while the recent ones (a moving average) took longer
//   than OVERLOAD_TARGET_MS, the process takes only half of OVERLOAD_MAX_IN_FLIGHT at once. A burst, or
//   a client that keeps many requests in flight at a rate the process serves quickly, is taken whole;
//   a load past what the process serves makes every taken request wait longer, and then the cap halves
//   until they are quick again (the time a taken request spends is about the requests in flight over
//   the rate the process answers them);
// * the event loop's delay, sampled every 25 ms, past OVERLOAD_MAX_EVENT_LOOP_DELAY_MS (0: off).
// A request that may wait on purpose (a long poll, an event stream, an A2A request: whatever asks for
// closedSignal) gives its place up as it starts waiting. Liveness and readiness are never shed: a monitor sees the truth.
// The gate runs before Express sees the request (api/app.ts puts it in front of the app's router):
// a refusal costs Node's parsing and one write, about half of what the same refusal costs as the first
// Express middleware, which is what decides how fast a saturated process can read and refuse.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { httpShed } from '../../shared/platform/metrics';

export interface OverloadLimits {
  /** Requests taken and not yet answered; past it, a new request is shed. */
  maxInFlight: number;
  /** Event-loop delay in ms past which new requests are shed; 0 turns this signal off. */
  maxEventLoopDelayMs: number;
  /**
   * While taken requests have recently spent longer than this many ms in the process, it takes only
   * half of maxInFlight at once; 0 turns this signal off.
   */
  targetMs?: number;
}

const body = Buffer.from(
  JSON.stringify({
    type: '/problems/overloaded',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The server is taking all the requests it can serve in time; retry after 1 s.',
    code: 'overloaded',
  }),
);
const headers = {
  'Content-Type': 'application/problem+json',
  'Content-Length': String(body.length),
  'Retry-After': '1',
  'Cache-Control': 'no-store',
};

const SAMPLE_MS = 25;
let delay = 0;
let sampler: NodeJS.Timeout | undefined;
/** The event loop's delay, as the last sample saw it: how late a 25 ms timer fired. */
function startSampling() {
  if (sampler) return;
  let expected = performance.now() + SAMPLE_MS;
  sampler = setInterval(() => {
    const now = performance.now();
    delay = Math.max(0, now - expected);
    expected = now + SAMPLE_MS;
  }, SAMPLE_MS);
  sampler.unref();
}

const gateKey = Symbol('overloadGate');
const takenKey = Symbol('overloadTaken');
interface Gate {
  inFlight: number;
  /** The time taken requests spent in the process, in ms: a moving average over the last ~20. */
  recentMs: number;
}
type Gated = ServerResponse & { [gateKey]?: Gate | undefined; [takenKey]?: number };
/** Each request's weight in the moving average of the time spent in the process. */
const WEIGHT = 0.05;

function release(this: Gated) {
  const gate = this[gateKey];
  if (!gate) return;
  this[gateKey] = undefined;
  gate.inFlight--;
  gate.recentMs += (performance.now() - (this[takenKey] ?? 0) - gate.recentMs) * WEIGHT;
}

/** The request no longer counts as work in flight: it waits (a long poll, a stream) or is done. */
export function leaveGate(res: ServerResponse): void {
  release.call(res as Gated);
}

const inFlightShed = httpShed.labels({ reason: 'in_flight' });
const delayShed = httpShed.labels({ reason: 'event_loop_delay' });
const slowShed = httpShed.labels({ reason: 'latency' });

/** The request's path, without its query: what the exemption is decided on, before any parsing. */
function pathOf(url: string | undefined): string {
  const q = url?.indexOf('?') ?? -1;
  return q === -1 ? (url ?? '') : url!.slice(0, q);
}

/**
 * The gate: true when the request is taken (it counts in flight until its response closes), false when
 * it was answered 503 `overloaded` here and nothing else may run for it.
 */
export function overloadGate(
  limits: OverloadLimits,
  exempt: (path: string) => boolean,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const gate: Gate = { inFlight: 0, recentMs: 0 };
  const target = limits.targetMs ?? 0;
  const half = Math.max(1, Math.floor(limits.maxInFlight / 2));
  if (limits.maxEventLoopDelayMs > 0) startSampling();
  return (req, res) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && exempt(pathOf(req.url))) return true;
    const shed =
      limits.maxEventLoopDelayMs > 0 && delay > limits.maxEventLoopDelayMs
        ? delayShed
        : gate.inFlight >= limits.maxInFlight
          ? inFlightShed
          : target > 0 && gate.inFlight >= half && gate.recentMs > target
            ? slowShed
            : undefined;
    if (shed) {
      shed.inc();
      res.writeHead(503, headers).end(body);
      return false;
    }
    gate.inFlight++;
    (res as Gated)[gateKey] = gate;
    (res as Gated)[takenKey] = performance.now();
    res.on('close', release);
    return true;
  };
}
