// The signed local AI runtime statement: the runtime probed just now, and the model digest with what
// was checked (reported by the runtime, or only configured).
import { canonicalJson } from '../platform/canonical';
import type { Signer } from '../platform/crypto';
import type { Env } from '../platform/env';
import { env } from '../platform/env';
import { probeHttp, probeLocalAi } from './probes';
import type { ProbeSettings } from './probes';

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
  // The statement names no endpoint: where the runtime listens is the operator's, not the public's.
  const statement = {
    type: RUNTIME_PROOF_TYPE,
    configured: true,
    model: settings.LOCAL_AI_MODEL ?? null,
    /** The digest the runtime reported when it did (what runs), else the configured one. */
    modelDigest: digest.observed ?? digest.configured,
    digest,
    probe: {
      reachable: probe.reachable === true,
      latencyMs: probe.latencyMs,
      modelListed: probe.modelListed ?? null,
      reason: probe.reason,
      detail: probe.detail ?? null,
      at: new Date().toISOString(),
    },
    keyId: signer.keyId,
  };
  return { ...statement, signature: signer.sign(canonicalJson(statement)) };
}
