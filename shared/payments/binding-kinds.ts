// How a transfer is told to be a quote's, per chain family: the binding kinds (a Solana Pay reference
// key, a unique amount, an address of its own), which one an asset's quotes use, and the error a binding
// that cannot be made now throws. Binding itself is `binding.ts`; the unique amounts `amount-holds.ts`.
import type { ChainSettings, TransferBinding } from '../chains';
import { env } from '../platform/env';
import type { Env } from '../platform/env';
import type { ChainFamily } from '../chains/assets';

export type BindingKind = TransferBinding['kind'];
export const bindingKinds = ['reference', 'amount', 'address'] as const;

export type BindingSettings = Pick<
  Env,
  'TREASURY_BITCOIN_XPUB' | 'AMOUNT_PUBLIC_SHARE' | 'AMOUNT_GATE_SHARE'
> &
  ChainSettings;

/** The binding could not be made now: the asset is left out of the offer, with this reason. */
export class BindingUnavailable extends Error {
  constructor(
    readonly code: 'amounts_exhausted' | 'address_unavailable',
    detail: string,
  ) {
    super(detail);
    this.name = 'BindingUnavailable';
  }
}

/** How quotes in an asset are told apart, by family (and, for Bitcoin, by what is configured). */
export function bindingKindFor(
  family: ChainFamily,
  settings: Pick<Env, 'TREASURY_BITCOIN_XPUB'> = env,
): BindingKind {
  switch (family) {
    case 'solana':
      return 'reference';
    case 'evm':
      return 'amount';
    case 'bitcoin':
      return settings.TREASURY_BITCOIN_XPUB ? 'address' : 'amount';
    case 'monero':
      return 'address';
  }
}
