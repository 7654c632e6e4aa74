// External providers: probes of the chain RPCs, the private-payments provider, the local AI runtime
// and the price source (short timeouts, in parallel); the signed local AI runtime statement; the
// private-payments login challenge and the proxied provider calls. Endpoints are named by origin only.
import { operatorFetch } from '../egress';
import type { EgressResponse } from '../egress';
import { canonicalJson } from '../canonical';
import { endpointName, httpRequest, jsonRpc } from '../chains/http';
import type { Env } from '../env';
import { env } from '../env';
import type { ChainFamily } from '../payments/assets';
import { chainFamilies, treasuryFor } from '../payments/assets';
import type { Signer } from '../crypto';

export interface Probe {
  configured: boolean;
  /** Null when there is nothing to reach (not configured, or a value from configuration). */
  reachable: boolean | null;
  latencyMs: number | null;
  endpoint?: string;
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
): Promise<{ ok: true; value: T; ms: number } | { ok: false; error: string; ms: number }> {
  const start = performance.now();
  try {
    const value = await fn();
    return { ok: true, value, ms: round(performance.now() - start) };
  } catch (err) {
    return { ok: false, error: (err as Error).message, ms: round(performance.now() - start) };
  }
}

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
  if (!url)
    return {
      configured: false,
      reachable: null,
      latencyMs: null,
      detail: `${chainEndpoint[family]} is not set`,
    };
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
          throw new Error(`HTTP ${answer.status}`);
        return answer.text.trim();
      }
    }
  });
  const endpoint = endpointName(url);
  return r.ok
    ? { configured: true, reachable: true, latencyMs: r.ms, endpoint, head: r.value }
    : { configured: true, reachable: false, latencyMs: null, endpoint, detail: r.error };
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
    ? { ok: false, detail: down.map(([f, p]) => `${f}: ${p.detail}`).join('; ') }
    : { ok: true, detail: configured.map(([f, p]) => `${f} ${p.latencyMs} ms`).join(', ') };
}

async function probeHttp(url: string, settings: Pick<Env, 'PROVIDER_TIMEOUT_MS'>) {
  return timed(async () => {
    const res = await operatorFetch(url, { signal: AbortSignal.timeout(settings.PROVIDER_TIMEOUT_MS) });
    const text = await res.text();
    return { status: res.status, text };
  });
}

/** The local AI runtime: an OpenAI-compatible `GET /v1/models`, and whether it lists the model. */
export async function probeLocalAi(settings: ProbeSettings = env) {
  if (!settings.LOCAL_AI_URL) {
    return {
      configured: false,
      reachable: null,
      latencyMs: null,
      detail: 'LOCAL_AI_URL is not set',
    } as Probe & {
      modelListed?: boolean | null;
    };
  }
  const url = `${settings.LOCAL_AI_URL.replace(/\/$/, '')}/v1/models`;
  const r = await probeHttp(url, settings);
  const endpoint = endpointName(settings.LOCAL_AI_URL);
  if (!r.ok)
    return {
      configured: true,
      reachable: false,
      latencyMs: null,
      endpoint,
      detail: r.error,
      modelListed: null,
    };
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
  return {
    configured: true,
    reachable: r.value.status < 500,
    latencyMs: r.ms,
    endpoint,
    detail: `HTTP ${r.value.status}`,
    modelListed,
  };
}

export async function probePaymentsProvider(settings: ProbeSettings = env): Promise<Probe> {
  if (!settings.PAYMENTS_PROVIDER_URL) {
    return {
      configured: false,
      reachable: null,
      latencyMs: null,
      detail: 'PAYMENTS_PROVIDER_URL is not set',
    };
  }
  const r = await probeHttp(`${settings.PAYMENTS_PROVIDER_URL.replace(/\/$/, '')}/health`, settings);
  const endpoint = endpointName(settings.PAYMENTS_PROVIDER_URL);
  return r.ok
    ? {
        configured: true,
        reachable: r.value.status < 500,
        latencyMs: r.ms,
        endpoint,
        detail: `HTTP ${r.value.status}`,
      }
    : { configured: true, reachable: false, latencyMs: null, endpoint, detail: r.error };
}

export async function probePriceSource(settings: ProbeSettings = env): Promise<Probe & { source: string }> {
  if (settings.RATE_SOURCE_URL) {
    const r = await probeHttp(settings.RATE_SOURCE_URL, settings);
    const endpoint = endpointName(settings.RATE_SOURCE_URL);
    return r.ok
      ? {
          source: 'http',
          configured: true,
          reachable: r.value.status < 400,
          latencyMs: r.ms,
          endpoint,
          detail: `HTTP ${r.value.status}`,
        }
      : { source: 'http', configured: true, reachable: false, latencyMs: null, endpoint, detail: r.error };
  }
  if (settings.RATES_USD) {
    return {
      source: 'config',
      configured: true,
      reachable: null,
      latencyMs: null,
      detail: 'RATES_USD (configuration)',
    };
  }
  return {
    source: 'none',
    configured: false,
    reachable: null,
    latencyMs: null,
    detail: 'no rate source is configured',
  };
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

// ---------------------------------------------------------------------------------------------------
// Local AI runtime proof

export const RUNTIME_PROOF_TYPE = 'proof-exchange.local-ai-runtime/v1';

export type DigestStatus = 'matches' | 'mismatch' | 'observed' | 'configured_not_observed' | 'unknown';

export interface DigestCheck {
  /** LOCAL_AI_MODEL_DIGEST: what the operator declares. */
  configured: string | null;
  /** What the runtime itself reported for the model just now, when its API offers one. */
  observed: string | null;
  /** Where the observed digest came from. */
  source: string | null;
  status: DigestStatus;
  /** The same in one sentence, for a reader of the statement. */
  detail: string;
}

/** `sha256:<hex>` whether the runtime gives the algorithm or only the hex (Ollama gives the hex). */
const normalizeDigest = (d: string) =>
  /^[0-9a-f]{64}$/i.test(d) ? `sha256:${d.toLowerCase()}` : d.toLowerCase();

/**
 * The model's digest as the runtime reports it. Ollama's `GET /api/tags` lists each model with its
 * digest (the sha256 of the model's manifest); OpenAI-compatible `GET /v1/models` carries none, so
 * a runtime that only speaks that reports nothing and the digest stays configured, not observed.
 */
export async function observeModelDigest(
  settings: ProbeSettings,
): Promise<{ digest: string; source: string } | null> {
  if (!settings.LOCAL_AI_URL || !settings.LOCAL_AI_MODEL) return null;
  const r = await probeHttp(`${settings.LOCAL_AI_URL.replace(/\/$/, '')}/api/tags`, settings);
  if (!r.ok || r.value.status !== 200) return null;
  try {
    const doc = JSON.parse(r.value.text) as {
      models?: Array<{ name?: unknown; model?: unknown; digest?: unknown }>;
    };
    const wanted = settings.LOCAL_AI_MODEL;
    const names = (m: { name?: unknown; model?: unknown }) =>
      [m.name, m.model].filter((n) => typeof n === 'string');
    const entry = (doc.models ?? []).find((m) =>
      names(m).some((n) => n === wanted || n === `${wanted}:latest`),
    );
    const digest = entry?.digest;
    if (typeof digest !== 'string' || !/^(sha256:)?[0-9a-f]{64}$/i.test(digest)) return null;
    return { digest: normalizeDigest(digest), source: 'GET /api/tags' };
  } catch {
    return null;
  }
}

/** Compares what the operator declares with what the runtime reports, and says which one it is. */
export function digestCheck(
  configuredRaw: string | undefined,
  observed: { digest: string; source: string } | null,
): DigestCheck {
  const configured = configuredRaw ? normalizeDigest(configuredRaw) : null;
  const base = { configured, observed: observed?.digest ?? null, source: observed?.source ?? null };
  if (observed && configured) {
    return observed.digest === configured
      ? {
          ...base,
          status: 'matches',
          detail: `The runtime reported ${observed.digest} for the model (${observed.source}); it equals LOCAL_AI_MODEL_DIGEST.`,
        }
      : {
          ...base,
          status: 'mismatch',
          detail: `The runtime reported ${observed.digest} for the model (${observed.source}), not the configured ${configured}: it does not serve the declared model.`,
        };
  }
  if (observed) {
    return {
      ...base,
      status: 'observed',
      detail: `The runtime reported ${observed.digest} for the model (${observed.source}); no digest is configured to compare it with.`,
    };
  }
  if (configured) {
    return {
      ...base,
      status: 'configured_not_observed',
      detail: `The digest is configured (LOCAL_AI_MODEL_DIGEST), not observed: the runtime's API reported none for this model.`,
    };
  }
  return {
    ...base,
    status: 'unknown',
    detail:
      'No digest is configured and the runtime reported none: this statement says nothing about the weights.',
  };
}

/**
 * A statement of the configured runtime, signed by the service key: its probe just now, and the
 * model digest with what was checked (observed from the runtime, or only configured).
 */
export async function localAiRuntimeProof(
  signer: Signer,
  settings: ProbeSettings & Pick<Env, 'LOCAL_AI_MODEL_DIGEST'> = env,
) {
  if (!settings.LOCAL_AI_URL) {
    return {
      configured: false as const,
      detail: 'No local AI runtime is configured (LOCAL_AI_URL is unset); nothing runs on a local model.',
    };
  }
  const [probe, observed] = await Promise.all([probeLocalAi(settings), observeModelDigest(settings)]);
  const digest = digestCheck(settings.LOCAL_AI_MODEL_DIGEST, observed);
  const statement = {
    type: RUNTIME_PROOF_TYPE,
    configured: true,
    endpoint: endpointName(settings.LOCAL_AI_URL),
    model: settings.LOCAL_AI_MODEL ?? null,
    /** The digest the runtime reported when it did (what runs), else the configured one. */
    modelDigest: digest.observed ?? digest.configured,
    digest,
    probe: {
      reachable: probe.reachable === true,
      latencyMs: probe.latencyMs,
      modelListed: probe.modelListed ?? null,
      detail: probe.detail ?? null,
      at: new Date().toISOString(),
    },
    keyId: signer.keyId,
  };
  return { ...statement, signature: signer.sign(canonicalJson(statement)) };
}

// ---------------------------------------------------------------------------------------------------
// Private-payments hand-off

export type HandOffSettings = Pick<
  Env,
  | 'PAYMENTS_PROVIDER_URL'
  | 'PAYMENTS_PROVIDER_LABEL'
  | 'PAYMENTS_PROVIDER_MOCK'
  | 'PAYMENTS_PROVIDER_SLUG'
  | 'PROVIDER_TIMEOUT_MS'
>;

export const CHALLENGE_TITLE = 'proof-exchange private payments login';
export const MOCK_MARKER = '[MOCK]';

export const providerSource = (settings: HandOffSettings = env) =>
  settings.PAYMENTS_PROVIDER_LABEL ??
  (settings.PAYMENTS_PROVIDER_URL ? new URL(settings.PAYMENTS_PROVIDER_URL).host : 'unconfigured');

export const challengeTitle = (settings: HandOffSettings = env) =>
  settings.PAYMENTS_PROVIDER_MOCK ? `${CHALLENGE_TITLE} ${MOCK_MARKER}` : CHALLENGE_TITLE;

/** The challenge response of the spec's Authentication 3, field for field, around an issued challenge. */
export function loginChallenge(
  issued: { challenge: string; wallet: string; ttlSeconds: number },
  apiOrigin: string,
  settings: HandOffSettings = env,
) {
  const paymentsUrl = settings.PAYMENTS_PROVIDER_URL!.replace(/\/$/, '');
  return {
    ok: true,
    source: providerSource(settings),
    challenge: { challenge: issued.challenge },
    next: {
      login:
        `POST ${paymentsUrl}/v1/spl/login with the wallet-signed challenge: JSON { "wallet": "<wallet>", ` +
        `"challenge": "<the challenge text above, unchanged>", "signature": "<base58 ed25519 signature of the ` +
        `challenge's UTF-8 bytes by the wallet>" }; the answer carries the access token. The challenge ` +
        `logs in once, within ${issued.ttlSeconds} s.`,
      privateBalance:
        `GET ${apiOrigin}/api/v1/${settings.PAYMENTS_PROVIDER_SLUG}/balances/${issued.wallet}?mint=<mint> ` +
        `with the header Authorization: Bearer <ACCESS_TOKEN> from the login answer.`,
    },
  };
}

export interface ProviderAnswer {
  status: number;
  body: unknown;
  latencyMs: number;
}

export class ProviderUnreachable extends Error {}

/** One GET to the provider with the timeout; the caller's bearer token is passed on, never logged. */
export async function providerGet(
  path: string,
  opts: { bearer?: string; settings?: HandOffSettings } = {},
): Promise<ProviderAnswer> {
  const settings = opts.settings ?? env;
  const base = settings.PAYMENTS_PROVIDER_URL!.replace(/\/$/, '');
  const start = performance.now();
  let res: EgressResponse;
  try {
    res = await operatorFetch(`${base}${path}`, {
      headers: {
        accept: 'application/json',
        ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      },
      signal: AbortSignal.timeout(settings.PROVIDER_TIMEOUT_MS),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    throw new ProviderUnreachable(
      e.name === 'TimeoutError'
        ? `${endpointName(base)} did not answer within ${settings.PROVIDER_TIMEOUT_MS} ms`
        : `${endpointName(base)} could not be reached (${e.cause?.code ?? e.message})`,
    );
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, body, latencyMs: round(performance.now() - start) };
}
