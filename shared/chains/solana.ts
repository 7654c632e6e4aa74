// Solana adapter: getTransaction at `finalized` commitment, SOL by System transfers and SPL tokens by
// Token/Token-2022 `transfer`/`transferChecked` to a token account the treasury owns.
import bs58 from 'bs58';
import { createHash } from 'node:crypto';
import type { Asset } from '../payments/assets';
import { SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM } from '../payments/assets';
import { RpcError, jsonRpc, unreachable } from './http';
import type { RpcOptions } from './http';
import { judgeTransfers } from './judge';
import type { Balance, ChainAdapter, Transfer, VerifyRequest, VerifyResult } from './types';

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const ASSOCIATED_TOKEN_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const TOKEN_PROGRAMS = new Set([SPL_TOKEN_PROGRAM, TOKEN_2022_PROGRAM]);

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

// --- transaction decoding -----------------------------------------------------------------------
interface CompiledInstruction {
  programIdIndex: number;
  accounts: number[];
  data: string;
}
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
    innerInstructions?: { index: number; instructions: CompiledInstruction[] }[] | null;
    loadedAddresses?: { writable: string[]; readonly: string[] } | null;
  } | null;
  transaction: {
    message: { accountKeys: string[]; instructions: CompiledInstruction[] };
    signatures: string[];
  };
}

const u64le = (data: Uint8Array, offset: number): bigint | undefined => {
  if (data.length < offset + 8) return undefined;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(offset);
};

/** Every SOL and SPL movement in a transaction (outer and inner instructions), as candidate transfers. */
export function solanaTransfers(tx: RpcTransaction): Transfer[] {
  const message = tx.transaction.message;
  // v0 transactions: static keys, then loaded writable, then loaded readonly — the index space instructions use.
  const keys = [
    ...message.accountKeys,
    ...(tx.meta?.loadedAddresses?.writable ?? []),
    ...(tx.meta?.loadedAddresses?.readonly ?? []),
  ];
  const balances = new Map<number, TokenBalance>();
  for (const b of [...(tx.meta?.preTokenBalances ?? []), ...(tx.meta?.postTokenBalances ?? [])]) {
    balances.set(b.accountIndex, b);
  }
  const list: { ix: CompiledInstruction; output: string }[] = [];
  message.instructions.forEach((ix, i) => {
    list.push({ ix, output: `${i}` });
    const inner = tx.meta?.innerInstructions?.find((x) => x.index === i);
    inner?.instructions.forEach((innerIx, j) => list.push({ ix: innerIx, output: `${i}.${j}` }));
  });

  const transfers: Transfer[] = [];
  for (const { ix, output } of list) {
    const program = keys[ix.programIdIndex];
    const account = (n: number) => {
      const index = ix.accounts[n];
      return index === undefined ? undefined : { index, key: keys[index] };
    };
    let data: Uint8Array;
    try {
      data = bs58.decode(ix.data);
    } catch {
      continue;
    }
    if (program === SYSTEM_PROGRAM) {
      const kind = data.length >= 4 ? Buffer.from(data).readUInt32LE(0) : -1;
      // 2 = Transfer [from, to]; 11 = TransferWithSeed [from, base, to]
      const from = account(0)?.key;
      const to = kind === 2 ? account(1)?.key : kind === 11 ? account(2)?.key : undefined;
      const lamports = u64le(data, 4);
      if (to && lamports !== undefined) {
        transfers.push({ output, to, amount: lamports, token: 'native', ...(from ? { payer: from } : {}) });
      }
    } else if (program && TOKEN_PROGRAMS.has(program)) {
      // 3 = Transfer [source, destination, authority]; 12 = TransferChecked [source, mint, destination, authority]
      const kind = data[0];
      if (kind !== 3 && kind !== 12) continue;
      const dest = account(kind === 3 ? 1 : 2);
      const source = account(0);
      const authority = account(kind === 3 ? 2 : 3)?.key;
      const amount = u64le(data, 1);
      if (!dest?.key || amount === undefined) continue;
      const destBalance = balances.get(dest.index);
      const mint =
        kind === 12 ? account(1)?.key : (destBalance?.mint ?? (source && balances.get(source.index)?.mint));
      if (!mint) continue;
      // The treasury is recognised by the owner the RPC reports for the destination token account;
      // the raw token account is kept too, for configured or derived account matching.
      transfers.push({
        output,
        to: destBalance?.owner ?? dest.key,
        amount,
        token: mint,
        ...(authority ? { payer: authority } : {}),
        tokenAccount: dest.key,
      });
    }
  }
  return transfers;
}

export interface SolanaAdapterOptions extends RpcOptions {
  rpcUrl: string;
  /** Token accounts that count as the treasury's in addition to its associated token accounts. */
  tokenAccounts?: readonly string[];
}

export function createSolanaAdapter(options: SolanaAdapterOptions): ChainAdapter {
  const rpc = <T>(method: string, params: unknown, exactIntegers?: string[]) =>
    jsonRpc<T>(options.rpcUrl, method, params, exactIntegers ? { ...options, exactIntegers } : options);
  const extraAccounts = new Set(options.tokenAccounts ?? []);

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
      const token = req.asset.contract ?? 'native';
      const treasuryAccounts = new Set(extraAccounts);
      if (req.asset.contract) {
        treasuryAccounts.add(associatedTokenAddress(req.to, req.asset.contract, req.asset.tokenProgram));
      }
      // A token account the treasury is known to hold counts as the treasury even when the node did
      // not report the account's owner.
      const transfers = solanaTransfers(tx).map((t) => {
        return t.tokenAccount && treasuryAccounts.has(t.tokenAccount) && t.token === token
          ? { ...t, to: req.to }
          : t;
      });
      return judgeTransfers(transfers, req, token, { final, reason: 'not_finalized' });
    } catch (err) {
      const down = unreachable(err);
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

  return { family: 'solana', verifyTransfer, readBalance };
}
