// Real ed25519 wallets (base58, as Solana prints them) and small helpers for the governance suites.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import bs58 from 'bs58';
import { logger } from '../../shared/log';
import { captureLogs as captureProcessLogs } from '../logs';

export const OPERATOR = 'Bearer op_test_token_0123456789';

export interface Wallet {
  address: string;
  sign(message: string): string;
}

export function wallet(): Wallet {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return {
    address: bs58.encode(raw),
    sign: (message) => bs58.encode(sign(null, Buffer.from(message), privateKey)),
  };
}

export const salt = (): string => randomBytes(32).toString('hex');

/** Waits until a wall-clock time (a window boundary): there is no event to wait on for the clock. */
export async function until(at: string | Date, extraMs = 30): Promise<void> {
  const ms = new Date(at).getTime() - Date.now() + extraMs;
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/** Every log line of this process at the most verbose level, until stop(). */
export const captureLogs = () => captureProcessLogs(logger);
