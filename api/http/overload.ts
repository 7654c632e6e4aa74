// Load shedding: past what the web process can serve, a request is answered 503 `overloaded` with
// Retry-After at once, rather than queued without bound (each queued request adds its wait to every
// later one, and its memory, until nothing is answered in time). What it counts:
// * requests in flight: taken, their body arrived, not yet answered; past OVERLOAD_MAX_IN_FLIGHT;
// * bodies still arriving: a request whose body did not come with its headers holds no in-flight place
//   until its body has arrived (a client trickling bodies would otherwise hold every place with no work
//   to do); these are counted apart, past OVERLOAD_MAX_BODIES, and each must arrive within
//   HTTP_BODY_GRACE_MS plus its length at HTTP_BODY_MIN_RATE bytes a second, or it is answered 408 and
//   its connection closed;
// * the time taken requests spend in the process: while the recent ones (a moving average) took longer
//   than OVERLOAD_TARGET_MS, the process takes only half of OVERLOAD_MAX_IN_FLIGHT at once. A burst, or
//   a client that keeps many requests in flight at a rate the process serves quickly, is taken whole;
//   a load past what the process serves makes every taken request wait longer, and then the cap halves
//   until they are quick again (the time a taken request spends is about the requests in flight over
//   the rate the process answers them);
// * the event loop's delay, sampled every 25 ms, past OVERLOAD_MAX_EVENT_LOOP_DELAY_MS (0: off).
// Both counts are shared fairly between client networks (the network the rate limiter counts: an IPv4
// address, an IPv6 /64, the one TRUST_PROXY hops vouch for). A network alone may take a whole cap; at
// the cap, a network below its share (the cap over the networks holding places) is still taken, up to
// a quarter past the cap, and one at or above its share is shed. So no network keeps another out.
// A request that may wait on purpose (a long poll, an event stream, an A2A request: whatever asks for
// closedSignal) gives its place up as it starts waiting. Liveness and readiness are never shed: a monitor sees the truth.
// The gate runs before Express sees the request (api/app.ts puts it in front of the app's router):
// a refusal costs Node's parsing and one write, about half of what the same refusal costs as the first
// Express middleware, which is what decides how fast a saturated process can read and refuse.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import proxyaddr from 'proxy-addr';
import { clientNetwork } from '../../shared/platform/client-network';
import { httpShed } from '../../shared/platform/metrics';

export interface OverloadLimits {
  /** Requests taken, their body arrived, not yet answered; past it, a new request is shed. */
  maxInFlight: number;
  /** Event-loop delay in ms past which new requests are shed; 0 turns this signal off. */
  maxEventLoopDelayMs: number;
  /**
   * While taken requests have recently spent longer than this many ms in the process, it takes only
   * half of maxInFlight at once; 0 turns this signal off.
   */
  targetMs?: number;
  /** Requests whose body is still arriving; past it, a new request with a body is shed. Default: maxInFlight. */
  maxBodies?: number;
  /** A body must arrive at this many bytes a second (over its declared length), after the grace; 0: no deadline. */
  bodyMinRate?: number;
  /** The time every body has before its rate counts, in ms. */
  bodyGraceMs?: number;
}

/** Who the gate counts a request as, and the most a body without a declared length may be. */
export interface GateOptions {
  /** GET and HEAD requests of these paths are never shed. */
  exempt: (path: string) => boolean;
  /** Proxy hops whose X-Forwarded-For is trusted (TRUST_PROXY), as Express is told. */
  trustProxy: number;
  /** IPv6 clients count as their network of this many bits (IPV6_PREFIX_LENGTH). */
  ipv6PrefixLength: number;
  /** The body limit: the length a chunked body's deadline is reckoned for. */
  bodyLimitBytes: number;
}

const problem = (status: number, title: string, code: string, detail: string) =>
  Buffer.from(JSON.stringify({ type: `/problems/${code}`, title, status, detail, code }));
const shedBody = problem(
  503,
  'Service Unavailable',
  'overloaded',
  'The server is taking all the requests it can serve in time; retry after 1 s.',
);
const shedHeaders = {
  'Content-Type': 'application/problem+json',
  'Content-Length': String(shedBody.length),
  'Retry-After': '1',
  'Cache-Control': 'no-store',
};
/** A whole HTTP answer, for a connection the gate closes after it. */
const rawAnswer = (status: string, body: Buffer, headers: string) =>
  Buffer.concat([
    Buffer.from(
      `HTTP/1.1 ${status}\r\nContent-Type: application/problem+json\r\nContent-Length: ${body.length}\r\n` +
        `Cache-Control: no-store\r\n${headers}Connection: close\r\n\r\n`,
    ),
    body,
  ]);
const slowAnswer = rawAnswer(
  '408 Request Timeout',
  problem(
    408,
    'Request Timeout',
    'request_timeout',
    'The request body did not arrive in time; send it again on a new connection.',
  ),
  '',
);
const cutAnswer = rawAnswer('503 Service Unavailable', shedBody, 'Retry-After: 1\r\n');

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

/** Places of one kind, in all and by client network (a network holding none has no entry). */
interface Pool {
  total: number;
  byNetwork: Map<string, number>;
}

const take = (pool: Pool, network: string) => {
  pool.total++;
  pool.byNetwork.set(network, (pool.byNetwork.get(network) ?? 0) + 1);
};
const give = (pool: Pool, network: string) => {
  pool.total--;
  const left = pool.byNetwork.get(network)! - 1;
  if (left === 0) pool.byNetwork.delete(network);
  else pool.byNetwork.set(network, left);
};

/** Why a pool refuses `network` one more place under `cap`, or undefined when it takes it. */
function refusal(pool: Pool, network: string, cap: number): 'full' | 'share' | undefined {
  if (pool.total < cap) return undefined;
  const held = pool.byNetwork.get(network) ?? 0;
  if (pool.total >= cap + Math.ceil(cap / 4)) return 'full';
  // Its share: the cap over the networks holding places, itself counted.
  const networks = pool.byNetwork.size + (held === 0 ? 1 : 0);
  if (held * networks < cap) return undefined;
  return networks > 1 ? 'share' : 'full';
}

const BODY = 1;
const IN_FLIGHT = 2;
const gateKey = Symbol('overloadGate');
const stateKey = Symbol('overloadState');
const networkKey = Symbol('overloadNetwork');
const takenKey = Symbol('overloadTaken');
const deadlineKey = Symbol('overloadDeadline');
const resKey = Symbol('overloadResponse');
interface Gate {
  inFlight: Pool;
  bodies: Pool;
  /** The time taken requests spent in the process, in ms: a moving average over the last ~20. */
  recentMs: number;
  /** The requests whose body is still arriving, oldest first. */
  arriving: Set<Gated>;
  /** Requests with a body taken this turn of the event loop, to be checked once it has parsed them. */
  unchecked: Gated[];
  checkScheduled: boolean;
  sweep: NodeJS.Timeout | undefined;
  /** The body's place, once a request is found still waiting for its body. */
  toBody: (res: Gated) => void;
}
type Gated = ServerResponse & {
  [gateKey]?: Gate;
  [stateKey]?: number;
  [networkKey]?: string;
  [takenKey]?: number;
  [deadlineKey]?: number;
};
type Arriving = IncomingMessage & { [resKey]?: Gated };
/** Each request's weight in the moving average of the time spent in the process. */
const WEIGHT = 0.05;
/** How often bodies still arriving are checked against their deadline. */
const SWEEP_MS = 250;

function release(this: Gated) {
  const gate = this[gateKey];
  const state = this[stateKey];
  if (!gate || !state) return;
  this[stateKey] = 0;
  if (state === BODY) {
    give(gate.bodies, this[networkKey]!);
    gate.arriving.delete(this);
    return;
  }
  give(gate.inFlight, this[networkKey]!);
  gate.recentMs += (performance.now() - this[takenKey]! - gate.recentMs) * WEIGHT;
}

/** The body has arrived: the request takes its in-flight place (it was admitted with room for one). */
function arrived(res: Gated) {
  if (res[stateKey] !== BODY) return;
  const gate = res[gateKey]!;
  give(gate.bodies, res[networkKey]!);
  gate.arriving.delete(res);
  take(gate.inFlight, res[networkKey]!);
  res[stateKey] = IN_FLIGHT;
  res[takenKey] = performance.now();
}

function bodyEnded(this: Arriving) {
  const res = this[resKey];
  if (res) arrived(res);
}

/**
 * The requests with a body taken since the last check, once their sockets' data has been parsed (each
 * socket's read is parsed whole before the next socket's is read, and a request's own turn ends before
 * the check runs): a body that came with its headers has arrived (the usual case, which costs nothing
 * more); one still arriving gives its in-flight place back for a body's place.
 */
function checkBodies(gate: Gate) {
  gate.checkScheduled = false;
  const taken = gate.unchecked;
  for (let i = 0; i < taken.length; i++) {
    const res = taken[i]!;
    if (res[stateKey] === IN_FLIGHT && !res.req.complete) gate.toBody(res);
  }
  taken.length = 0;
}

const slowShed = httpShed.labels({ reason: 'slow_body' });

/**
 * A request refused once the app has it (a body past its deadline: 408; a body with no place left:
 * 503): the answer written to its connection, which is closed with the request at once, as Node ends a
 * request past its timeout. So the app, whatever it was waiting on, never gets the body to act on, and
 * finds a closed connection whenever it answers. One the app has begun to answer is left to finish.
 */
function cut(res: Gated, answer: Buffer) {
  release.call(res);
  if (res.headersSent) return;
  res.socket?.write(answer);
  res.req.destroy();
}

function sweep(gate: Gate) {
  if (gate.arriving.size === 0) {
    clearInterval(gate.sweep);
    gate.sweep = undefined;
    return;
  }
  const now = performance.now();
  for (const res of gate.arriving) {
    // Arrived, and waiting for the app to read it: work in flight, not a slow body.
    if (res.req.complete) arrived(res);
    else if (now > res[deadlineKey]!) {
      slowShed.inc();
      cut(res, slowAnswer);
    }
  }
}

/** The request no longer counts as work in flight: it waits (a long poll, a stream) or is done. */
export function leaveGate(res: ServerResponse): void {
  release.call(res as Gated);
}

const inFlightShed = httpShed.labels({ reason: 'in_flight' });
const delayShed = httpShed.labels({ reason: 'event_loop_delay' });
const latencyShed = httpShed.labels({ reason: 'latency' });
const bodiesShed = httpShed.labels({ reason: 'bodies' });
const shareShed = httpShed.labels({ reason: 'network_share' });

/** The request's path, without its query: what the exemption is decided on, before any parsing. */
function pathOf(url: string | undefined): string {
  const q = url?.indexOf('?') ?? -1;
  return q === -1 ? (url ?? '') : url!.slice(0, q);
}

const socketNetwork = Symbol('clientNetwork');

/**
 * The gate: true when the request is taken (it holds a place until its response closes), false when
 * it was answered 503 `overloaded` here and nothing else may run for it.
 */
export function overloadGate(
  limits: OverloadLimits,
  options: GateOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { maxInFlight } = limits;
  const maxBodies = limits.maxBodies ?? maxInFlight;
  const target = limits.targetMs ?? 0;
  const half = Math.max(1, Math.floor(maxInFlight / 2));
  const rate = limits.bodyMinRate ?? 0;
  const grace = limits.bodyGraceMs ?? 0;
  const gate: Gate = {
    inFlight: { total: 0, byNetwork: new Map() },
    bodies: { total: 0, byNetwork: new Map() },
    recentMs: 0,
    arriving: new Set(),
    unchecked: [],
    checkScheduled: false,
    sweep: undefined,
    toBody: (res) => {
      const network = res[networkKey]!;
      give(gate.inFlight, network);
      if (refusal(gate.bodies, network, maxBodies)) {
        res[stateKey] = 0;
        bodiesShed.inc();
        cut(res, cutAnswer);
        return;
      }
      take(gate.bodies, network);
      res[stateKey] = BODY;
      const length = res.req.headers['content-length'];
      res[deadlineKey] =
        rate > 0
          ? res[takenKey]! +
            grace +
            ((length === undefined ? options.bodyLimitBytes : Number(length)) * 1000) / rate
          : Infinity;
      gate.arriving.add(res);
      if (rate > 0) gate.sweep ??= setInterval(sweep, SWEEP_MS, gate).unref();
      (res.req as Arriving)[resKey] = res;
      res.req.on('end', bodyEnded);
    },
  };
  const v6 = options.ipv6PrefixLength;
  // The client network as api/http/ratelimit.ts `clientAddress` has it, Express's req.ip read the same
  // way (proxy-addr, trusting the last TRUST_PROXY hops); a socket's own address is worked out once.
  const hops = options.trustProxy;
  const trust = (_address: string, hop: number) => hop < hops;
  const networkOf = (req: IncomingMessage): string => {
    if (hops > 0 && req.headers['x-forwarded-for'] !== undefined)
      return clientNetwork(proxyaddr(req, trust), v6);
    const socket = req.socket as Socket & { [socketNetwork]?: string };
    return (socket[socketNetwork] ??= clientNetwork(socket.remoteAddress ?? 'unknown', v6));
  };
  if (limits.maxEventLoopDelayMs > 0) startSampling();

  const shed = (res: ServerResponse, counter: typeof inFlightShed) => {
    counter.inc();
    res.writeHead(503, shedHeaders).end(shedBody);
    return false;
  };

  return (req, res) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && options.exempt(pathOf(req.url))) return true;
    if (limits.maxEventLoopDelayMs > 0 && delay > limits.maxEventLoopDelayMs) return shed(res, delayShed);
    // The requests taken before this one have had their data parsed: those still waiting for their
    // body hold no in-flight place when this one is decided.
    if (gate.unchecked.length > 0) checkBodies(gate);
    const network = networkOf(req);
    const slow = target > 0 && gate.recentMs > target;
    const why = refusal(gate.inFlight, network, slow ? half : maxInFlight);
    if (why) {
      return shed(
        res,
        why === 'share' ? shareShed : slow && gate.inFlight.total < maxInFlight ? latencyShed : inFlightShed,
      );
    }
    const length = req.headers['content-length'];
    const chunked = req.headers['transfer-encoding'] !== undefined;
    const body = chunked || (length !== undefined && length !== '0');
    if (body) {
      // Taken as in flight, and as a body still arriving should it not have come with its headers: it
      // needs room in both.
      const bodyWhy = refusal(gate.bodies, network, maxBodies);
      if (bodyWhy) return shed(res, bodyWhy === 'share' ? shareShed : bodiesShed);
    }
    const gated = res as Gated;
    gated[gateKey] = gate;
    gated[networkKey] = network;
    gated[stateKey] = IN_FLIGHT;
    gated[takenKey] = performance.now();
    take(gate.inFlight, network);
    res.on('close', release);
    // Checked by the next request's admission, or at the end of this turn of the event loop, once what
    // came with the headers has been parsed.
    if (body) {
      gate.unchecked.push(gated);
      if (!gate.checkScheduled) {
        gate.checkScheduled = true;
        setImmediate(checkBodies, gate);
      }
    }
    return true;
  };
}
