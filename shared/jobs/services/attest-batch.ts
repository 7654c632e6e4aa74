// attest.batch: up to 1000 SHA-256 digests under one signed RFC 6962 Merkle root, with an inclusion
// proof per digest, so each holder can show their digest was attested without the others'.
import { z } from 'zod';
import { canonicalJson } from '../../platform/canonical';
import { asTrust, verifySignedBy } from '../../platform/trust';
import type { Trust } from '../../platform/trust';
import { serviceSigningKey } from '../../platform/keys';
import {
  inclusionProof,
  leafHash,
  nodeHash,
  rootHash,
  verifyInclusion,
} from '../../platform/translog/merkle';
import type { HashSource } from '../../platform/translog/merkle';

export const BATCH_ATTESTATION_TYPE = 'proof-exchange.attest.batch/v1';
export const MAX_BATCH_DIGESTS = 1000;

const digest = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'a SHA-256 digest: 64 hex characters')
  .transform((s) => s.toLowerCase());

export const attestBatchInput = z.strictObject({
  digests: z.array(digest).min(1).max(MAX_BATCH_DIGESTS),
});
export type AttestBatchInput = z.output<typeof attestBatchInput>;

/** What the signature covers: the root, the tree size and when; not the digests themselves. */
export interface BatchTreeHead {
  type: typeof BATCH_ATTESTATION_TYPE;
  algorithm: 'sha256';
  treeSize: number;
  rootHash: string;
  time: string;
  jobId: string;
  keyId: string;
}

export interface BatchAttestation extends BatchTreeHead {
  signature: string;
  /** Per digest, in input order: its leaf index and audit path (hex, leaf to root). */
  inclusions: Array<{ digest: string; leafIndex: number; proof: string[] }>;
}

export function batchHeadMessage(h: BatchTreeHead): string {
  return canonicalJson({
    type: h.type,
    algorithm: h.algorithm,
    treeSize: h.treeSize,
    rootHash: h.rootHash,
    time: h.time,
    jobId: h.jobId,
    keyId: h.keyId,
  });
}

interface Progress {
  jobId: string;
  progress(percent: number, stage?: string): Promise<void>;
}

/** Leaf hashes with every complete subtree precomputed, so each audit path costs O(log n) hashes. */
function layeredSource(leaves: Buffer[]): HashSource {
  const levels: Buffer[][] = [leaves];
  for (let prev = leaves; prev.length > 1;) {
    const next: Buffer[] = [];
    for (let j = 0; j + 1 < prev.length; j += 2) next.push(nodeHash(prev[j]!, prev[j + 1]!));
    levels.push(next);
    prev = next;
  }
  return {
    leafHash: (i) => leaves[i]!,
    perfectSubtree: (start, level) => levels[level]?.[start >> level],
  };
}

/** Builds and signs the tree. The leaf is the digest's 32 bytes; duplicates keep their own leaves. */
export async function attestBatch(
  input: AttestBatchInput,
  ctx: Progress,
  now = new Date(),
): Promise<BatchAttestation> {
  const leaves = input.digests.map((d) => leafHash(Buffer.from(d, 'hex')));
  await ctx.progress(10, 'hashing');
  const source = layeredSource(leaves);
  const root = rootHash(source, leaves.length);
  const key = serviceSigningKey();
  const head: BatchTreeHead = {
    type: BATCH_ATTESTATION_TYPE,
    algorithm: 'sha256',
    treeSize: leaves.length,
    rootHash: root.toString('hex'),
    time: now.toISOString(),
    jobId: ctx.jobId,
    keyId: key.keyId,
  };
  const signature = key.sign(batchHeadMessage(head));
  await ctx.progress(30, 'proving');
  const inclusions: BatchAttestation['inclusions'] = [];
  for (let i = 0; i < leaves.length; i++) {
    inclusions.push({
      digest: input.digests[i]!,
      leafIndex: i,
      proof: inclusionProof(source, i, leaves.length).map((h) => h.toString('hex')),
    });
    if (i % 200 === 199) await ctx.progress(30 + Math.floor((60 * (i + 1)) / leaves.length), 'proving');
  }
  return { ...head, signature, inclusions };
}

/**
 * Offline check of one digest's inclusion under a signed batch head, whose key the trust root lists
 * (role `attestation`, valid at the head's time), or under the bare public key.
 */
export function verifyBatchInclusion(
  head: BatchTreeHead & { signature: string },
  inclusion: { digest: string; leafIndex: number; proof: string[] },
  trust: Trust,
  loggedAt?: string,
): boolean {
  if (head.type !== BATCH_ATTESTATION_TYPE || head.algorithm !== 'sha256') return false;
  const signed = verifySignedBy(
    asTrust(trust),
    { keyId: head.keyId, role: 'attestation', signedAt: head.time, loggedAt },
    batchHeadMessage(head),
    head.signature,
  );
  if (!signed.ok) return false;
  if (!/^[0-9a-f]{64}$/.test(inclusion.digest) || !inclusion.proof.every((p) => /^[0-9a-f]{64}$/.test(p)))
    return false;
  return verifyInclusion(
    leafHash(Buffer.from(inclusion.digest, 'hex')),
    inclusion.leafIndex,
    head.treeSize,
    inclusion.proof.map((p) => Buffer.from(p, 'hex')),
    Buffer.from(head.rootHash, 'hex'),
  );
}

export const attestBatchService = {
  id: 'attest.batch',
  name: 'Batch attestation (Merkle root)',
  description:
    'Puts up to 1000 SHA-256 digests under one RFC 6962 Merkle root signed with the service key (ed25519), with an inclusion proof per digest. Verifiable offline with the public key from /api/health.',
  priceUsdCents: 50,
  expectedDurationMs: 500,
  input: attestBatchInput,
  examples: [
    {
      digests: [
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824',
      ],
    },
  ],
  run: (input: AttestBatchInput, ctx: Progress) => attestBatch(input, ctx),
};
