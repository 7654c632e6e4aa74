// Reading the terms a payable row stored (quotes, checkouts, payment gate requests): the asset as the
// row recorded it, the binding it was made with, and what a chain adapter is asked to verify.
import type { TransferBinding, VerifyRequest } from '../chains';
import { builtInAsset, findAsset } from '../chains/assets';
import type { Asset, AssetId } from '../chains/assets';
import type { BindingKind } from './binding-kinds';

/** The columns every payable row keeps of its terms (quotes, checkouts, payment gate requests). */
export interface TermsRow {
  asset: AssetId | string;
  network: string;
  decimals: number;
  contract: string | null;
  token_program: string | null;
  pay_to: string;
  amount: string;
  binding: BindingKind | null;
  reference_key: string | null;
  address_index: number | null;
  created_at: Date;
  expires_at: Date;
}

/**
 * The asset as the row recorded it: network, contract/mint, decimals and token program are the row's,
 * never today's configuration; only names and the family come from the registry.
 */
export function assetSnapshot(row: TermsRow): Asset {
  const base = builtInAsset(row.asset) ?? findAsset(row.asset);
  if (!base) throw new Error(`unknown asset ${row.asset}`);
  const { contract: _contract, tokenProgram: _program, ...rest } = base;
  const tokenProgram = row.token_program ?? base.tokenProgram;
  return {
    ...rest,
    network: row.network,
    decimals: row.decimals,
    ...(row.contract ? { contract: row.contract } : {}),
    ...(tokenProgram ? { tokenProgram } : {}),
  };
}

/** The binding a row was made with; undefined for rows made before bindings existed. */
export function bindingOf(row: TermsRow): TransferBinding | undefined {
  switch (row.binding) {
    case 'reference':
      return row.reference_key ? { kind: 'reference', reference: row.reference_key } : undefined;
    case 'amount':
      return { kind: 'amount' };
    case 'address':
      return { kind: 'address', index: row.address_index ?? 0 };
    default:
      return undefined;
  }
}

/** Everything an adapter is asked for one row and one transaction, from the row alone. */
export function verifyRequestFor(
  row: TermsRow,
  tx: { txRef: string; txKey?: string | null; skipOutputs?: readonly string[] },
): VerifyRequest {
  const binding = bindingOf(row);
  return {
    asset: assetSnapshot(row),
    txRef: tx.txRef,
    to: row.pay_to,
    minAmount: String(row.amount),
    ...(binding ? { binding } : {}),
    quotedAt: new Date(row.created_at),
    ...(tx.txKey ? { txKey: tx.txKey } : {}),
    ...(tx.skipOutputs ? { skipOutputs: tx.skipOutputs } : {}),
  };
}
