// Agent wallets: ed25519 public keys and signatures in base58, as Solana wallets print them, checked
// with the raw-key verifier of shared/platform/crypto.
import bs58 from 'bs58';
import { z } from 'zod';
import { verifyEd25519 } from './crypto';

function decode58(text: string): Uint8Array | undefined {
  try {
    return bs58.decode(text);
  } catch {
    return undefined;
  }
}

/** A base58 ed25519 public key (32 bytes): what a Solana wallet calls its address. */
export const walletPublicKeySchema = z
  .string()
  .min(32)
  .max(44)
  .refine((s) => decode58(s)?.length === 32, 'an ed25519 public key: 32 bytes in base58 (a Solana address)')
  .describe('ed25519 public key, base58 (32 bytes), as a Solana wallet address');

/** A base58 ed25519 signature (64 bytes). */
export const walletSignatureSchema = z
  .string()
  .min(64)
  .max(90)
  .refine((s) => decode58(s)?.length === 64, 'an ed25519 signature: 64 bytes in base58')
  .describe('ed25519 signature, base58 (64 bytes), as Solana wallets produce');

/** True when `signature58` is the wallet's ed25519 signature over the UTF-8 bytes of `message`. */
export function verifyWalletSignature(publicKey58: string, message: string, signature58: string): boolean {
  const key = decode58(publicKey58);
  const sig = decode58(signature58);
  if (key?.length !== 32 || sig?.length !== 64) return false;
  // One spelling per key and signature, as verifyEd25519 insists for base64url.
  if (bs58.encode(key) !== publicKey58 || bs58.encode(sig) !== signature58) return false;
  return verifyEd25519(
    Buffer.from(key).toString('base64url'),
    message,
    Buffer.from(sig).toString('base64url'),
  );
}
