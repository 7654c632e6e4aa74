// Solana adapter: getTransaction at `finalized` commitment; what the treasury received is read from the
// balances before and after (SOL per account, SPL and Token-2022 per token account the treasury owns).
import bs58 from 'bs58';
import { createHash } from 'node:crypto';
import type { Asset } from './assets';
import { SPL_TOKEN_PROGRAM } from './assets';
import { RpcError, jsonRpc, networkProbe, unreachable, wrongNetwork } from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { Balance, ChainAdapter, Transfer, VerifyRequest, VerifyResult } from './types';

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const ASSOCIATED_TOKEN_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';

// --- program derived addresses ------------------------------------------------------------------
// A PDA must not be a valid ed25519 point; the check is the curve equation solved for x.
const P = 2n ** 255n - 19n;
const modP = (a: bigint) => ((a % P) + P) % P;
function powMod(base: bigint, exp: bigint): bigint {
  let result = 1n;
  let b = modP(base);
  let e = exp;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}
const D = modP(-121665n * powMod(121666n, P - 2n));

/** Whether 32 bytes decode to a point on ed25519 (as curve25519-dalek's decompress decides). */
export function isOnCurve(bytes: Uint8Array): boolean {
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(i === 31 ? (bytes[i] ?? 0) & 0x7f : (bytes[i] ?? 0));
  y = modP(y);
  const y2 = (y * y) % P;
  const u = modP(y2 - 1n);
  const v = modP(D * y2 + 1n);
  const x2 = (u * powMod(v, P - 2n)) % P;
  return x2 === 0n || powMod(x2, (P - 1n) / 2n) === 1n;
}

/** Solana's find_program_address: the highest bump whose address is off the curve. */
export function findProgramAddress(
  seeds: Uint8Array[],
  programId: string,
): { address: string; bump: number } {
  const program = bs58.decode(programId);
  for (let bump = 255; bump >= 0; bump--) {
    const hash = createHash('sha256');
    for (const seed of seeds) hash.update(seed);
    hash.update(Uint8Array.of(bump)).update(program).update('ProgramDerivedAddress');
    const candidate = hash.digest();
    if (!isOnCurve(candidate)) return { address: bs58.encode(candidate), bump };
  }
  throw new Error('no program address found');
}

/** The associated token account of `owner` for `mint` under `tokenProgram`. */
export function associatedTokenAddress(
  owner: string,
  mint: string,
  tokenProgram = SPL_TOKEN_PROGRAM,
): string {
  return findProgramAddress(
    [bs58.decode(owner), bs58.decode(tokenProgram), bs58.decode(mint)],
    ASSOCIATED_TOKEN_PROGRAM,
  ).address;
}

// --- transaction reading -------------------------------------------------------------------------
interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner?: string;
  uiTokenAmount: { amount: string; decimals: number };
}
interface RpcTransaction {
  slot: number;
  blockTime?: number | null;
  meta: {
    err: unknown;
    preBalances: number[];
    postBalances: number[];
    preTokenBalances?: TokenBalance[] | null;
    postTokenBalances?: TokenBalance[] | null;
    loadedAddresses?: { writable: string[]; readonly: string[] } | null;
  } | null;
  transaction: {
    message: { accountKeys: string[] };
    signatures: string[];
  };
}

/** Static keys, then loaded writable, then loaded readonly: the index space balances use (v0 transactions). */
export function accountKeysOf(tx: RpcTransaction): string[] {
  return [
    ...tx.transaction.message.accountKeys,
    ...(tx.meta?.loadedAddresses?.writable ?? []),
    ...(tx.meta?.loadedAddresses?.readonly ?? []),
  ];
}

/**
 * What each account received in a transaction, from the balances the node reports before and after
 * it (post − pre): lamports per account, and token units per token account with its mint and owner.
 * Whatever path the money took (transfer, transferChecked, a Token-2022 transfer with a withheld fee,
 * a transfer hook, a program's CPI), only what arrived counts; a transfer to oneself counts nothing.
 * The fee payer is reported as the payer.
 */
export function solanaCredits(tx: RpcTransaction): Transfer[] {
  const keys = accountKeysOf(tx);
  const meta = tx.meta;
  if (!meta) return [];
  const payer = keys[0];
  const credits: Transfer[] = [];
  meta.postBalances.forEach((post, i) => {
    const delta = BigInt(post) - BigInt(meta.preBalances[i] ?? 0);
    const key = keys[i];
    if (delta > 0n && key) {
      credits.push({
        output: `account:${key}`,
        to: key,
        amount: delta,
        token: 'native',
        ...(payer ? { payer } : {}),
      });
    }
  });
  const before = new Map((meta.preTokenBalances ?? []).map((b) => [b.accountIndex, b]));
  for (const after of meta.postTokenBalances ?? []) {
    const pre = before.get(after.accountIndex);
    const delta =
      BigInt(after.uiTokenAmount.amount) -
      (pre && pre.mint === after.mint ? BigInt(pre.uiTokenAmount.amount) : 0n);
    const account = keys[after.accountIndex];
    if (delta <= 0n || !account) continue;
    // The treasury is recognised by the owner the RPC reports for the token account; the account
    // itself is kept too, for configured or derived account matching.
    credits.push({
      output: `token:${account}`,
      to: after.owner ?? account,
      amount: delta,
      token: after.mint,
      tokenAccount: account,
      ...(payer ? { payer } : {}),
    });
  }
  return credits;
}

/** CAIP-2 ids of Solana clusters are `solana:` and the first 32 characters of the genesis hash. */
export const solanaNetworkId = (genesisHash: string) => `solana:${genesisHash.slice(0, 32)}`;

export interface SolanaAdapterOptions extends RpcOptions {
  rpcUrl: string;
  /** Token accounts that count as the treasury's in addition to its associated token accounts. */
  tokenAccounts?: readonly string[];
}

export function createSolanaAdapter(options: SolanaAdapterOptions): ChainAdapter {
  const rpc = <T>(method: string, params: unknown, exactIntegers?: string[]) =>
    jsonRpc<T>(options.rpcUrl, method, params, exactIntegers ? { ...options, exactIntegers } : options);
  const extraAccounts = new Set(options.tokenAccounts ?? []);
  const probe = networkProbe(async () => solanaNetworkId(await rpc<string>('getGenesisHash', [])));

  async function getTransaction(signature: string, commitment: 'finalized' | 'confirmed') {
    return rpc<RpcTransaction | null>('getTransaction', [
      signature,
      { encoding: 'json', commitment, maxSupportedTransactionVersion: 0 },
    ]);
  }

  async function verifyTransfer(req: VerifyRequest): Promise<VerifyResult> {
    if (req.asset.family !== 'solana') return { status: 'mismatch', reason: 'unsupported_asset' };
    if (!/^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(req.txRef)) {
      return { status: 'not_found', reason: 'invalid_tx_ref', detail: 'Not a Solana transaction signature.' };
    }
    try {
      // A devnet or testnet RPC must never settle mainnet quotes: devnet SOL is free.
      const wrong = wrongNetwork(req.asset.network, await probe.get());
      if (wrong) return wrong;
      let tx = await getTransaction(req.txRef, 'finalized');
      let final = true;
      if (!tx) {
        // Not finalized may still mean seen: a confirmed transaction is worth waiting for.
        tx = await getTransaction(req.txRef, 'confirmed');
        if (!tx) return { status: 'not_found' };
        final = false;
      }
      if (!tx.meta) return { status: 'pending', reason: 'rpc_error', detail: 'The node returned no status.' };
      if (tx.meta.err) {
        return {
          status: 'mismatch',
          reason: 'reverted',
          detail: `The transaction failed: ${JSON.stringify(tx.meta.err)}`,
        };
      }
      let blockTime = tx.blockTime ?? null;
      if (blockTime === null && final) blockTime = await rpc<number | null>('getBlockTime', [tx.slot]);
      const token = req.asset.contract ?? 'native';
      const treasuryAccounts = new Set(extraAccounts);
      if (req.asset.contract) {
        treasuryAccounts.add(associatedTokenAddress(req.to, req.asset.contract, req.asset.tokenProgram));
      }
      // A token account the treasury is known to hold counts as the treasury even when the node did
      // not report the account's owner.
      const credits = solanaCredits(tx).map((t) =>
        t.tokenAccount && treasuryAccounts.has(t.tokenAccount) && t.token === token
          ? { ...t, to: req.to }
          : t,
      );
      return judgeTransfers(credits, req, token, { final, reason: 'not_finalized' }, undefined, {
        blockTime: blockTime === null ? undefined : new Date(blockTime * 1000),
        accountKeys: accountKeysOf(tx),
      });
    } catch (err) {
      const down = unreachable(err, probe);
      if (down) return down;
      if (err instanceof RpcError)
        return { status: 'pending', reason: 'rpc_error', detail: `RPC error ${err.code}: ${err.message}` };
      throw err;
    }
  }

  async function readBalance(address: string, asset: Asset): Promise<Balance> {
    if (!asset.contract) {
      const res = await rpc<{ value: string }>(
        'getBalance',
        [address, { commitment: 'finalized' }],
        ['value'],
      );
      return { address, asset: asset.id, amount: BigInt(res.value).toString() };
    }
    const res = await rpc<{
      value: { account: { data: { parsed: { info: { tokenAmount: { amount: string } } } } } }[];
    }>('getTokenAccountsByOwner', [
      address,
      { mint: asset.contract },
      { encoding: 'jsonParsed', commitment: 'finalized' },
    ]);
    const total = res.value.reduce(
      (sum, a) => sum + BigInt(a.account.data.parsed.info.tokenAmount.amount),
      0n,
    );
    return { address, asset: asset.id, amount: total.toString() };
  }

  return { family: 'solana', verifyTransfer, readBalance, network: () => probe.get() };
}
