// Signed tree heads and the JSON shapes of log proofs: what a client downloads and checks offline.
import { z } from 'zod';
import { canonicalJson } from '../canonical';
import { keyIdOf, verifyEd25519 } from '../crypto';
import type { Signer } from '../crypto';
import {
  consistencyProof,
  fromHex,
  hashSource,
  inclusionProof,
  leafHash,
  rootHash,
  toHex,
  verifyConsistency,
  verifyInclusion,
} from './merkle';
import type { LeafHashes } from './merkle';

export const hashHex = z.string().regex(/^[0-9a-f]{64}$/, 'a 32-byte hash as 64 lowercase hex characters');
const size = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
// A tree of 2^53 leaves has paths of at most 53 elements; the bound keeps pasted input small.
const path = z.array(hashHex).max(64);

export const signedTreeHeadSchema = z
  .object({
    treeSize: size,
    rootHash: hashHex,
    timestamp: z.iso.datetime(),
    keyId: z.string().regex(/^[0-9a-f]{16}$/),
    signature: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature, base64url'),
  })
  .strict();
export type SignedTreeHead = z.infer<typeof signedTreeHeadSchema>;
export type TreeHead = Omit<SignedTreeHead, 'keyId' | 'signature'>;

export const inclusionProofSchema = z
  .object({ leafIndex: size, treeSize: size, leafHash: hashHex, path })
  .strict()
  .refine((p) => p.leafIndex < p.treeSize, {
    message: 'leafIndex must be below treeSize',
    path: ['leafIndex'],
  });
export type InclusionProof = z.infer<typeof inclusionProofSchema>;

export const consistencyProofSchema = z
  .object({ firstSize: size, secondSize: size, firstRoot: hashHex, secondRoot: hashHex, path })
  .strict()
  .refine((p) => p.firstSize <= p.secondSize, {
    message: 'firstSize must not exceed secondSize',
    path: ['firstSize'],
  });
export type ConsistencyProof = z.infer<typeof consistencyProofSchema>;

/** The bytes a tree head signature covers; the type tag keeps it from being replayed as another signed object. */
export function treeHeadMessage(head: TreeHead & { keyId: string }): string {
  return canonicalJson({
    type: 'proof-exchange/tree-head/v1',
    treeSize: head.treeSize,
    rootHash: head.rootHash,
    timestamp: head.timestamp,
    keyId: head.keyId,
  });
}

export function signTreeHead(
  head: { treeSize: number; rootHash: Uint8Array | string; timestamp: Date | string },
  key: Signer,
): SignedTreeHead {
  const body = {
    treeSize: head.treeSize,
    rootHash: typeof head.rootHash === 'string' ? head.rootHash : toHex(head.rootHash),
    timestamp: head.timestamp instanceof Date ? head.timestamp.toISOString() : head.timestamp,
    keyId: key.keyId,
  };
  return { ...body, signature: key.sign(treeHeadMessage(body)) };
}

/** True when the tree head is well formed and signed by the key (base64url raw ed25519). Never throws. */
export function verifyTreeHead(sth: unknown, publicKey: string): boolean {
  const parsed = signedTreeHeadSchema.safeParse(sth);
  if (!parsed.success) return false;
  if (parsed.data.keyId !== keyIdOf(publicKey)) return false;
  return verifyEd25519(publicKey, treeHeadMessage(parsed.data), parsed.data.signature);
}

/** The leaf hash of an entry's bytes, hex: what the log stores for it. */
export const leafHashHex = (data: Uint8Array | string): string =>
  toHex(leafHash(typeof data === 'string' ? Buffer.from(data) : data));

/** Checks an inclusion proof (JSON form) against a root (hex). Never throws. */
export function checkInclusionProof(proof: unknown, rootHashHex: string): boolean {
  const parsed = inclusionProofSchema.safeParse(proof);
  if (!parsed.success || !hashHex.safeParse(rootHashHex).success) return false;
  const p = parsed.data;
  return verifyInclusion(
    fromHex(p.leafHash),
    p.leafIndex,
    p.treeSize,
    p.path.map(fromHex),
    fromHex(rootHashHex),
  );
}

/** Checks a consistency proof (JSON form). Never throws. */
export function checkConsistencyProof(proof: unknown): boolean {
  const parsed = consistencyProofSchema.safeParse(proof);
  if (!parsed.success) return false;
  const p = parsed.data;
  return verifyConsistency(
    p.firstSize,
    p.secondSize,
    fromHex(p.firstRoot),
    fromHex(p.secondRoot),
    p.path.map(fromHex),
  );
}

/** The inclusion proof of leaf `leafIndex` in the tree of `treeSize` leaves, in its JSON form. */
export function buildInclusionProof(leaves: LeafHashes, leafIndex: number, treeSize: number): InclusionProof {
  const leaf = hashSource(leaves).leafHash(leafIndex);
  return {
    leafIndex,
    treeSize,
    leafHash: toHex(leaf),
    path: inclusionProof(leaves, leafIndex, treeSize).map(toHex),
  };
}

/** The proof that the tree of `firstSize` leaves is a prefix of the tree of `secondSize`, in its JSON form. */
export function buildConsistencyProof(
  leaves: LeafHashes,
  firstSize: number,
  secondSize: number,
): ConsistencyProof {
  return {
    firstSize,
    secondSize,
    firstRoot: toHex(rootHash(leaves, firstSize)),
    secondRoot: toHex(rootHash(leaves, secondSize)),
    path: consistencyProof(leaves, firstSize, secondSize).map(toHex),
  };
}
