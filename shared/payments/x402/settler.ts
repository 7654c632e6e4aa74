// What settles x402 `exact` payments, as the rest of the service sees it: the settler's interface, its
// refusal when it cannot be asked, and the networks it answers for (cached). settle.ts chooses one.
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import type { Hex } from 'viem';
import { ExternalFailure } from '../../platform/errors';

/** The settler could not be asked (down, timed out, answered nonsense): the outcome is unknown. */
export class SettlerUnavailable extends ExternalFailure {
  constructor(detail: string) {
    super(detail);
    this.name = 'SettlerUnavailable';
  }
}

/** Called with a settling transaction's hash before it is broadcast (where the settler knows it then). */
export type BeforeBroadcast = (txHash: Hex) => Promise<void>;

export interface X402Settler {
  readonly kind: 'facilitator' | 'self';
  /** CAIP-2 networks whose x402 v2 `exact` payments it settles now (cached). */
  networks(): Promise<ReadonlySet<string>>;
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    beforeBroadcast?: BeforeBroadcast,
  ): Promise<SettleResponse>;
}

const SUPPORTED_TTL_MS = 5 * 60_000;
/** After a failed /supported, ask again this soon rather than after the full TTL. */
const SUPPORTED_RETRY_MS = 15_000;

/** The networks of a /supported answer that take v2 `exact` on EVM (SVM needs a binding we cannot check). */
export function exactEvmNetworks(supported: {
  kinds: ReadonlyArray<{ x402Version: number; scheme: string; network: string }>;
}): Set<string> {
  return new Set(
    supported.kinds
      .filter((k) => k.x402Version === 2 && k.scheme === 'exact' && k.network.startsWith('eip155:'))
      .map((k) => k.network),
  );
}

/** True when `network` is in the set, directly or through a family wildcard (eip155:*). */
export function networkSupported(networks: ReadonlySet<string>, network: string): boolean {
  return networks.has(network) || networks.has(`${network.split(':')[0]}:*`);
}

/** A settler's networks, kept SUPPORTED_TTL_MS after a good answer and SUPPORTED_RETRY_MS after a failed one. */
export function cachedNetworks(load: () => Promise<Set<string>>) {
  let value: Set<string> | undefined;
  let until = 0;
  let inflight: Promise<Set<string>> | undefined;
  return async (): Promise<ReadonlySet<string>> => {
    if (value && Date.now() < until) return value;
    inflight ??= load()
      .then((v) => {
        value = v;
        until = Date.now() + SUPPORTED_TTL_MS;
        return v;
      })
      .catch(() => {
        // Keep the last good answer a while; with none, x402 is off until the settler answers.
        until = Date.now() + SUPPORTED_RETRY_MS;
        value ??= new Set();
        return value;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}
