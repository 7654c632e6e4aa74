// Who verifies and settles x402 `exact` payments: a configured facilitator (its /verify, /settle and
// /supported, called through the operator egress), or the service itself with its own gas account
// (the @x402/evm facilitator scheme run in process, broadcasting over EVM_RPC_URL: self-settler.ts).
// Either way the protocol is the @x402 packages'; this module only chooses, transports and caches.
import { createHash } from 'node:crypto';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { Hex } from 'viem';
import { z } from 'zod';
import { operatorFetch } from '../../platform/egress';
import { env } from '../../platform/env';
import type { Env } from '../../platform/env';
import { SettlerUnavailable, cachedNetworks, exactEvmNetworks } from './settler';
import type { X402Settler } from './settler';

export { SettlerUnavailable, exactEvmNetworks, networkSupported } from './settler';
export type { BeforeBroadcast, X402Settler } from './settler';

export type X402Settings = Pick<
  Env,
  'X402_FACILITATOR_URL' | 'X402_FACILITATOR_TIMEOUT_MS' | 'X402_EVM_SETTLER_KEY' | 'EVM_RPC_URL'
>;

const verifyResponseSchema = z.looseObject({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string().optional(),
});
const settleResponseSchema = z.looseObject({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  payer: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
});
const supportedResponseSchema = z.looseObject({
  kinds: z.array(
    z.looseObject({
      x402Version: z.number(),
      scheme: z.string(),
      network: z.string(),
      extra: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
});

/** A facilitator over HTTP, every call through the operator egress (no redirects followed). */
export function facilitatorSettler(url: string, timeoutMs: number): X402Settler {
  const base = url.replace(/\/+$/, '');
  async function call<T>(path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    let status: number;
    let text: string;
    try {
      const res = await operatorFetch(`${base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      throw new SettlerUnavailable(`The x402 facilitator did not answer ${path}: ${(err as Error).message}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new SettlerUnavailable(`The x402 facilitator answered ${path} with HTTP ${status}, not JSON.`);
    }
    // A refusal comes as 200 with isValid/success false, or as a 4xx carrying the same document.
    const parsed = schema.safeParse(doc);
    if (!parsed.success) {
      throw new SettlerUnavailable(
        `The x402 facilitator answered ${path} with HTTP ${status} and no result.`,
      );
    }
    return parsed.data;
  }
  const request = (payload: PaymentPayload, requirements: PaymentRequirements) => ({
    x402Version: payload.x402Version,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });
  return {
    kind: 'facilitator',
    networks: cachedNetworks(async () => exactEvmNetworks(await call('/supported', supportedResponseSchema))),
    verify: async (payload, requirements) =>
      (await call('/verify', verifyResponseSchema, request(payload, requirements))) as VerifyResponse,
    settle: async (payload, requirements) =>
      (await call('/settle', settleResponseSchema, request(payload, requirements))) as SettleResponse,
  };
}

/**
 * The service as its own facilitator (self-settler.ts): @x402/evm's `exact` scheme with a signer whose
 * transactions are signed here, so each one's hash is known, and recorded, before it is broadcast. Its
 * libraries load on the first call.
 */
export function selfSettler(privateKey: Hex, rpcUrl: string, timeoutMs: number): X402Settler {
  let loaded: Promise<X402Settler> | undefined;
  const settler = () =>
    (loaded ??= import('./self-settler').then((m) => m.ownGasSettler(privateKey, rpcUrl, timeoutMs)));
  return {
    kind: 'self',
    networks: async () => (await settler()).networks(),
    verify: async (payload, requirements) => (await settler()).verify(payload, requirements),
    settle: async (payload, requirements, beforeBroadcast) =>
      (await settler()).settle(payload, requirements, beforeBroadcast),
  };
}

let configured: { key: string; settler: X402Settler | undefined } | undefined;

/** The settler the configuration names (facilitator first, then the own gas key), or none. */
export function x402Settler(settings: X402Settings = env): X402Settler | undefined {
  const key = [
    settings.X402_FACILITATOR_URL ?? '',
    settings.X402_EVM_SETTLER_KEY
      ? createHash('sha256').update(settings.X402_EVM_SETTLER_KEY).digest('hex')
      : '',
    settings.EVM_RPC_URL ?? '',
    settings.X402_FACILITATOR_TIMEOUT_MS,
  ].join('|');
  if (configured?.key === key) return configured.settler;
  let settler: X402Settler | undefined;
  if (settings.X402_FACILITATOR_URL)
    settler = facilitatorSettler(settings.X402_FACILITATOR_URL, settings.X402_FACILITATOR_TIMEOUT_MS);
  else if (settings.X402_EVM_SETTLER_KEY && settings.EVM_RPC_URL)
    settler = selfSettler(
      settings.X402_EVM_SETTLER_KEY as Hex,
      settings.EVM_RPC_URL,
      settings.X402_FACILITATOR_TIMEOUT_MS,
    );
  configured = { key, settler };
  return settler;
}

/** The networks x402 payments can be taken on now (empty when no settler is configured or answering). */
export async function x402Networks(settings: X402Settings = env): Promise<ReadonlySet<string>> {
  const settler = x402Settler(settings);
  return settler ? settler.networks() : new Set();
}
