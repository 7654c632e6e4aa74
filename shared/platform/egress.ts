// Every request the service makes goes out through here. Two policies:
// * user targets (job webhooks, logistics deliveries, agent endpoints): https to public unicast
//   addresses only, the name resolved once by the connection itself and the socket pinned to the
//   checked address (no second lookup for DNS rebinding to win), redirects never followed;
// * operator endpoints (chain RPCs, the payments provider, the local AI runtime, the rate source): the
//   operator configured them, so their addresses are trusted (a local node on loopback is normal), but
//   redirects are still not followed.
// `LOGISTICS_ALLOW_PRIVATE_TARGETS=true` lifts the address rule for user targets (a closed network).
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupAllOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, fetch as undiciFetch } from 'undici';
import type { RequestInit as UndiciRequestInit, Response as UndiciResponse } from 'undici';
import { env } from './env';

export type EgressResponse = UndiciResponse;
export type EgressInit = Pick<UndiciRequestInit, 'method' | 'headers' | 'body' | 'signal'>;

/** A target the policy refuses; `reason` is safe to show to the caller who named it. */
export class EgressRefusedError extends Error {
  readonly code = 'target_not_allowed';
  constructor(readonly reason: string) {
    super(`The target is refused: ${reason}.`);
    this.name = 'EgressRefusedError';
  }
}

/** Whether user targets may be internal addresses and plain http (opt-in, off by default). */
export const privateTargetsAllowed = (): boolean => env.LOGISTICS_ALLOW_PRIVATE_TARGETS === true;

// Global unicast IPv6 lives in 2000::/3; everything else (IPv4-compatible ::/96, mapped, NAT64, ...)
// can lead back inside.
const globalUnicast6 = ipaddr.parseCIDR('2000::/3');

/**
 * Why an address may not be a user target (`loopback`, `private`, `rfc6052`, ...), or undefined for a
 * public unicast address. IPv4-mapped, NAT64, 6to4, Teredo and site-local IPv6 are refused whatever
 * IPv4 address they carry.
 */
export function refusedRange(address: string): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return 'not an IP address';
  }
  const range = parsed.range();
  if (parsed.kind() === 'ipv4') return range === 'unicast' ? undefined : range;
  if (range !== 'unicast') return range;
  return parsed.match(globalUnicast6) ? undefined : 'reserved';
}

// Host names that only ever mean this machine or its network.
const internalNames = /(^|\.)(localhost|localdomain|local|internal|home\.arpa)\.?$/i;

/**
 * The resolver behind every user-target connection: the system's (hosts file, then DNS). Replaceable
 * so a test can play a rebinding DNS server.
 */
export const egressDns = {
  lookup: (
    hostname: string,
    options: LookupAllOptions,
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ): void => dnsLookup(hostname, options, callback),
};

const resolveAll = (hostname: string): Promise<LookupAddress[]> =>
  new Promise((resolve) =>
    egressDns.lookup(hostname, { all: true }, (err, addresses) => resolve(err ? [] : addresses)),
  );

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * The `lookup` of every user-target connection: resolves once, refuses the whole name if any of its
 * addresses is internal, and hands the checked addresses to the socket, which connects to them as given.
 */
function checkingLookup(
  hostname: string,
  options: { family?: number | string; hints?: number; all?: boolean },
  callback: LookupCallback,
): void {
  const family = options.family === 'IPv6' ? 6 : options.family === 'IPv4' ? 4 : Number(options.family ?? 0);
  egressDns.lookup(hostname, { all: true, family, hints: options.hints ?? 0 }, (err, addresses) => {
    if (err) return callback(err, []);
    if (!privateTargetsAllowed()) {
      const bad = addresses.find((a) => refusedRange(a.address));
      if (bad || addresses.length === 0) {
        const e = new EgressRefusedError(`${hostname} resolves to an internal address`) as Error & {
          code: string;
        };
        return callback(e as NodeJS.ErrnoException, []);
      }
    }
    if (options.all) return callback(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

let userAgent: Agent | undefined;
let operatorAgent: Agent | undefined;

const agentFor = (policy: 'user' | 'operator'): Agent =>
  policy === 'user'
    ? (userAgent ??= new Agent({ connect: { lookup: checkingLookup as never }, keepAliveTimeout: 4_000 }))
    : (operatorAgent ??= new Agent({ keepAliveTimeout: 4_000 }));

/** Closes the pooled connections (at shutdown). */
export async function closeEgress(): Promise<void> {
  const agents = [userAgent, operatorAgent].filter((a): a is Agent => !!a);
  userAgent = operatorAgent = undefined;
  await Promise.all(agents.map((a) => a.close().catch(() => undefined)));
}

function parseTarget(url: string): URL {
  try {
    return new URL(url);
  } catch {
    throw new EgressRefusedError('not a URL');
  }
}

/** The checks that need no DNS: scheme, credentials, literal addresses, internal names. */
function staticProblem(target: URL): string | undefined {
  const allowed = privateTargetsAllowed();
  if (target.protocol !== 'https:' && !(allowed && target.protocol === 'http:'))
    return 'the target must be an https URL';
  if (target.username || target.password) return 'the target must not carry credentials';
  if (allowed) return undefined;
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(host)) {
    const range = refusedRange(host);
    return range ? `${host} is in the ${range} range` : undefined;
  }
  if (internalNames.test(host) || !host.includes('.')) return `${host} names an internal host`;
  return undefined;
}

/**
 * Checks a user-given URL when it is registered (a webhook, an agent endpoint), so the caller hears
 * at once: a reason string when refused, null when acceptable. A name that does not resolve now is
 * refused when `requireResolvable` (an immediate delivery), else left to the check at connection.
 */
export async function checkUserTarget(
  url: string,
  opts: { requireResolvable?: boolean } = {},
): Promise<string | null> {
  let target: URL;
  try {
    target = parseTarget(url);
  } catch (err) {
    return (err as EgressRefusedError).reason;
  }
  const problem = staticProblem(target);
  if (problem) return problem;
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (privateTargetsAllowed() || ipaddr.isValid(host)) return null;
  const addresses = await resolveAll(host);
  if (addresses.length === 0) return opts.requireResolvable ? `the host ${host} does not resolve` : null;
  const bad = addresses.find((a) => refusedRange(a.address));
  return bad ? `${host} resolves to an internal address` : null;
}

/**
 * A request to a user-given URL. Throws EgressRefusedError when the target is refused (before or at
 * connection); a redirect is returned as it is, never followed.
 */
export async function userFetch(url: string, init: EgressInit = {}): Promise<EgressResponse> {
  const target = parseTarget(url);
  const problem = staticProblem(target);
  if (problem) throw new EgressRefusedError(problem);
  try {
    return await undiciFetch(target, { ...init, redirect: 'manual', dispatcher: agentFor('user') });
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (cause instanceof EgressRefusedError) throw cause;
    throw err;
  }
}

/** A request to an endpoint the operator configured; redirects are not followed. */
export function operatorFetch(url: string, init: EgressInit = {}): Promise<EgressResponse> {
  return undiciFetch(url, { ...init, redirect: 'manual', dispatcher: agentFor('operator') });
}
