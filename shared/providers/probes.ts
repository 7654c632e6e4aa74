// Probes of the external providers: the chain RPCs, the private-payments provider, the local AI
// runtime and the price source (short timeouts, in parallel), and the cache of public status answers.
// What a probe answers is public: configured, reachable, latency and a stable reason code, never an
// endpoint (an origin, a host, a port) nor an upstream error message, which may carry one; those go
// to the log (debug).
import { operatorFetch } from '../platform/egress';
import { RpcUnreachableError, endpointName, httpRequest, jsonRpc } from '../chains/http';
import type { Env } from '../platform/env';
import { env } from '../platform/env';
import { logger } from '../platform/log';
import { adapterFor, endpointNetwork } from '../chains';
import type { ChainSettings } from '../chains';
import type { Asset, AssetSettings, ChainFamily } from '../chains/assets';
import { chainFamilies, enabledAssets, treasuryFor } from '../chains/assets';

/** Why a provider is or is not reachable: a stable code, the same whatever the endpoint. */
export const probeReasons = [
  'ok',
  'not_configured',
  'from_configuration',
  'unreachable',
  'timeout',
  'http_error',
  'unexpected_answer',
] as const;
export type ProbeReason = (typeof probeReasons)[number];

export interface Probe {
  configured: boolean;
  /** Null when there is nothing to reach (not configured, or a value from configuration). */
  reachable: boolean | null;
  latencyMs: number | null;
  reason: ProbeReason;
  /** The reason in words, from fixed text (a setting's name, an HTTP status): never an address. */
  detail?: string;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

const statusCache = new Map<string, { at: number; value: Promise<unknown> }>();

/**
 * A public status answer reused for PROVIDER_STATUS_CACHE_MS (in flight included), so callers of the
 * status routes cannot make the service ask its providers once per request.
 */
export function cachedStatus<T>(key: string, fn: () => Promise<T>, now = Date.now()): Promise<T> {
  const hit = statusCache.get(key);
  if (hit && now - hit.at < env.PROVIDER_STATUS_CACHE_MS) return hit.value as Promise<T>;
  const value = fn();
  statusCache.set(key, { at: now, value });
  // A failed probe is not kept: the next caller asks again.
  value.catch(() => statusCache.delete(key));
  return value;
}

async function timed<T>(
  fn: () => Promise<T>,
): Promise<{ ok: true; value: T; ms: number } | { ok: false; error: unknown; ms: number }> {
  const start = performance.now();
  try {
    const value = await fn();
    return { ok: true, value, ms: round(performance.now() - start) };
  } catch (err) {
    return { ok: false, error: err, ms: round(performance.now() - start) };
  }
}

/** A probe's answer was not the one asked for (no head, no JSON where JSON was due). */
class UnexpectedAnswer extends Error {}

const reasonText = (reason: ProbeReason, timeoutMs: number): string =>
  ({
    ok: 'answered',
    not_configured: 'not configured',
    from_configuration: 'a value from configuration',
    unreachable: 'could not be reached',
    timeout: `no answer within ${timeoutMs} ms`,
    http_error: 'answered with an HTTP error',
    unexpected_answer: 'answered, but not with what was asked',
  })[reason];

/**
 * A failed probe as the public may see it: its reason, no address and no upstream message. The full
 * error (with the endpoint's origin) goes to the log.
 */
function failedProbe(provider: string, url: string, err: unknown, timeoutMs: number): Probe {
  const e = err as Error;
  const reason: ProbeReason =
    err instanceof RpcUnreachableError
      ? err.kind
      : e?.name === 'TimeoutError'
        ? 'timeout'
        : err instanceof UnexpectedAnswer
          ? 'unexpected_answer'
          : 'unreachable';
  logger.debug({ provider, endpoint: endpointName(url), err: e?.message }, 'provider probe failed');
  return {
    configured: true,
    reachable: false,
    latencyMs: null,
    reason,
    detail: reasonText(reason, timeoutMs),
  };
}

const notConfigured = (setting: string): Probe => ({
  configured: false,
  reachable: null,
  latencyMs: null,
  reason: 'not_configured',
  detail: `${setting} is not set`,
});

const chainEndpoint: Record<
  ChainFamily,
  'SOLANA_RPC_URL' | 'EVM_RPC_URL' | 'BITCOIN_ESPLORA_URL' | 'MONERO_WALLET_RPC_URL'
> = {
  solana: 'SOLANA_RPC_URL',
  evm: 'EVM_RPC_URL',
  bitcoin: 'BITCOIN_ESPLORA_URL',
  monero: 'MONERO_WALLET_RPC_URL',
};

export type ProbeSettings = Pick<
  Env,
  | 'SOLANA_RPC_URL'
  | 'EVM_RPC_URL'
  | 'BITCOIN_ESPLORA_URL'
  | 'MONERO_WALLET_RPC_URL'
  | 'PROVIDER_TIMEOUT_MS'
  | 'PAYMENTS_PROVIDER_URL'
  | 'LOCAL_AI_URL'
  | 'LOCAL_AI_MODEL'
  | 'RATE_SOURCE_URL'
  | 'RATES_USD'
>;

/** Asks one chain endpoint for its head (block, slot or height): the cheapest call that proves it answers. */
export async function probeChain(
  family: ChainFamily,
  settings: ProbeSettings = env,
): Promise<Probe & { head?: string }> {
  const url = settings[chainEndpoint[family]];
  if (!url) return notConfigured(chainEndpoint[family]);
  const opts = { timeoutMs: settings.PROVIDER_TIMEOUT_MS, retries: 0 };
  const r = await timed(async (): Promise<string> => {
    switch (family) {
      case 'evm':
        return BigInt(await jsonRpc<string>(url, 'eth_blockNumber', [], opts)).toString();
      case 'solana':
        return String(await jsonRpc<number>(url, 'getSlot', [{ commitment: 'finalized' }], opts));
      case 'monero':
        return String((await jsonRpc<{ height: number }>(url, 'get_height', {}, opts)).height);
      case 'bitcoin': {
        const answer = await httpRequest(`${url.replace(/\/$/, '')}/blocks/tip/height`, {}, opts);
        if (answer.status !== 200 || !/^\d+$/.test(answer.text.trim()))
          throw new UnexpectedAnswer(`HTTP ${answer.status}`);
        return answer.text.trim();
      }
    }
  }).then((r) =>
    // A node's own error answer, or a head that is no number, is an answer but not the one asked for.
    r.ok || r.error instanceof RpcUnreachableError
      ? r
      : { ...r, error: new UnexpectedAnswer(String(r.error)) },
  );
  return r.ok
    ? { configured: true, reachable: true, latencyMs: r.ms, reason: 'ok', head: r.value }
    : failedProbe(`chain-rpc:${family}`, url, r.error, settings.PROVIDER_TIMEOUT_MS);
}

/** Every configured chain family answers (for readiness); families without an endpoint are not asked. */
export async function chainReadiness(
  settings: ProbeSettings = env,
): Promise<{ ok: boolean; detail: string }> {
  const probes = await Promise.all(
    chainFamilies.map(async (f) => [f, await probeChain(f, settings)] as const),
  );
  const configured = probes.filter(([, p]) => p.configured);
  if (configured.length === 0) return { ok: true, detail: 'no chain endpoint is configured' };
  const down = configured.filter(([, p]) => !p.reachable);
  return down.length
    ? { ok: false, detail: down.map(([f, p]) => `${f}: ${p.reason}`).join('; ') }
    : { ok: true, detail: configured.map(([f, p]) => `${f} ${p.latencyMs} ms`).join(', ') };
}

/**
 * Every configured chain endpoint serves the network of the assets it settles: each is asked which
 * network it serves (an EVM node its chain id, as CAIP-2) and compared with its family's enabled assets.
 * An endpoint serving none of their networks (a devnet node behind mainnet assets) is a failure, listed
 * by family; assets left on another network beside ones it serves are named in the detail.
 */
export async function chainNetworkReadiness(
  settings: ChainSettings & AssetSettings & Pick<Env, 'PROVIDER_TIMEOUT_MS'> = env,
): Promise<{ ok: boolean; detail: string }> {
  const byFamily = new Map<ChainFamily, Asset[]>();
  for (const asset of enabledAssets(settings))
    byFamily.set(asset.family, [...(byFamily.get(asset.family) ?? []), asset]);
  const results = await Promise.all(
    [...byFamily].map(async ([family, assets]) => {
      if (!adapterFor(family, settings).configured) return null;
      // Bounded like every probe; an endpoint that does not answer fails chainAdapters as well.
      const served = await endpointNetwork(family, settings, settings.PROVIDER_TIMEOUT_MS);
      if (served === undefined)
        return { family, ok: false, text: `${family}: the endpoint did not say which network it serves` };
      const wanted = [...new Set(assets.map((a) => a.network))];
      const off = assets.filter((a) => a.network !== served).map((a) => a.id);
      if (!wanted.includes(served))
        return {
          family,
          ok: false,
          text: `${family}: the endpoint serves ${served}, its assets need ${wanted.join(' or ')}`,
        };
      return {
        family,
        ok: true,
        text: `${family} ${served}${off.length ? ` (${off.join(', ')} on another network, not offered)` : ''}`,
      };
    }),
  );
  const probed = results.filter((r) => r !== null);
  if (probed.length === 0) return { ok: true, detail: 'no chain endpoint settles an enabled asset' };
  const failed = probed.filter((r) => !r.ok);
  return failed.length
    ? { ok: false, detail: failed.map((r) => r.text).join('; ') }
    : { ok: true, detail: probed.map((r) => r.text).join(', ') };
}

export async function probeHttp(url: string, settings: Pick<Env, 'PROVIDER_TIMEOUT_MS'>) {
  return timed(async () => {
    const res = await operatorFetch(url, { signal: AbortSignal.timeout(settings.PROVIDER_TIMEOUT_MS) });
    const text = await res.text();
    return { status: res.status, text };
  });
}

/** An HTTP probe's answer: below `okBelow` it reached something that answered as asked. */
function httpProbe(status: number, ms: number, okBelow: number): Probe {
  const reachable = status < okBelow;
  return {
    configured: true,
    reachable,
    latencyMs: ms,
    reason: reachable ? 'ok' : 'http_error',
    detail: `HTTP ${status}`,
  };
}

/** The local AI runtime: an OpenAI-compatible `GET /v1/models`, and whether it lists the model. */
export async function probeLocalAi(
  settings: ProbeSettings = env,
): Promise<Probe & { modelListed: boolean | null }> {
  if (!settings.LOCAL_AI_URL) return { ...notConfigured('LOCAL_AI_URL'), modelListed: null };
  const url = `${settings.LOCAL_AI_URL.replace(/\/$/, '')}/v1/models`;
  const r = await probeHttp(url, settings);
  if (!r.ok)
    return { ...failedProbe('local-ai', url, r.error, settings.PROVIDER_TIMEOUT_MS), modelListed: null };
  let modelListed: boolean | null = null;
  try {
    const doc = JSON.parse(r.value.text) as {
      data?: Array<{ id?: string }>;
      models?: Array<{ name?: string }>;
    };
    const ids = [...(doc.data ?? []).map((m) => m.id), ...(doc.models ?? []).map((m) => m.name)];
    if (settings.LOCAL_AI_MODEL) modelListed = ids.includes(settings.LOCAL_AI_MODEL);
  } catch {
    modelListed = null;
  }
  return { ...httpProbe(r.value.status, r.ms, 500), modelListed };
}

export async function probePaymentsProvider(settings: ProbeSettings = env): Promise<Probe> {
  if (!settings.PAYMENTS_PROVIDER_URL) return notConfigured('PAYMENTS_PROVIDER_URL');
  const url = `${settings.PAYMENTS_PROVIDER_URL.replace(/\/$/, '')}/health`;
  const r = await probeHttp(url, settings);
  return r.ok
    ? httpProbe(r.value.status, r.ms, 500)
    : failedProbe('payments-provider', url, r.error, settings.PROVIDER_TIMEOUT_MS);
}

export async function probePriceSource(settings: ProbeSettings = env): Promise<Probe & { source: string }> {
  if (settings.RATE_SOURCE_URL) {
    const r = await probeHttp(settings.RATE_SOURCE_URL, settings);
    return {
      source: 'http',
      ...(r.ok
        ? httpProbe(r.value.status, r.ms, 400)
        : failedProbe('price-source', settings.RATE_SOURCE_URL, r.error, settings.PROVIDER_TIMEOUT_MS)),
    };
  }
  if (settings.RATES_USD) {
    return {
      source: 'config',
      configured: true,
      reachable: null,
      latencyMs: null,
      reason: 'from_configuration',
      detail: 'RATES_USD (configuration)',
    };
  }
  return { source: 'none', ...notConfigured('RATE_SOURCE_URL'), detail: 'no rate source is configured' };
}

/** Every external provider, probed in parallel. */
export async function providerIntegrations(settings: ProbeSettings = env) {
  const [chains, payments, localAi, price] = await Promise.all([
    Promise.all(chainFamilies.map(async (f) => ({ family: f, ...(await probeChain(f, settings)) }))),
    probePaymentsProvider(settings),
    probeLocalAi(settings),
    probePriceSource(settings),
  ]);
  return {
    providers: [
      ...chains.map(({ family, ...p }) => ({
        id: `chain-rpc:${family}`,
        kind: 'chain-rpc',
        family,
        treasuryConfigured: !!treasuryFor(family),
        ...p,
      })),
      { id: 'payments-provider', kind: 'payments-provider', ...payments },
      { id: 'local-ai', kind: 'local-ai', ...localAi },
      { id: 'price-source', kind: 'price-source', ...price },
    ],
    checkedAt: new Date().toISOString(),
  };
}
