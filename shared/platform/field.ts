// BN254 field helpers for the blind-policy circuits: Poseidon as circomlib computes it, salts, the
// membership Merkle tree.
import { randomBytes } from 'node:crypto';
import { poseidon } from '@iden3/js-crypto';

/** The scalar field of BN254, in which every circuit signal lives. */
export const FIELD_PRIME = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;

/** Values compared by the circuits are bounded to this many bits (Num2Bits in circuits/lib/policy.circom). */
export const VALUE_BITS = 64;
export const MAX_VALUE = (1n << BigInt(VALUE_BITS)) - 1n;

/** Depth of the membership circuit's Merkle tree: sets of up to 2^10 = 1024 members. */
export const MEMBERSHIP_DEPTH = 10;
export const MAX_SET_SIZE = 2 ** MEMBERSHIP_DEPTH;

/**
 * Poseidon over BN254 as circomlib's circuits compute it (@iden3/js-crypto's, checked against
 * circomlibjs in test/credentials/issuer.test.ts). Plain BigInt arithmetic: nothing to build first,
 * where circomlibjs compiles its wasm field (~0.6 s a process, ~2 s for its EdDSA), which a command
 * line tool pays on every run. Inputs are taken modulo the prime, as circomlibjs and the circuits take
 * them. Async, as callers have always awaited it.
 */
export async function poseidonHash(inputs: bigint[]): Promise<bigint> {
  return poseidon.hash(inputs.map((v) => ((v % FIELD_PRIME) + FIELD_PRIME) % FIELD_PRIME));
}

/** A uniformly random field element: 31 random bytes are always below the prime. */
export function randomFieldElement(): bigint {
  return BigInt(`0x${randomBytes(31).toString('hex')}`);
}

/** A policy id as a field element: the label's ASCII bytes read as a big-endian integer. */
export function labelToField(label: string): bigint {
  const bytes = Buffer.from(label, 'ascii');
  if (bytes.length > 31) throw new Error(`Policy label too long for one field element: ${label}`);
  return BigInt(`0x${bytes.toString('hex')}`);
}

export interface MerkleWitness {
  root: bigint;
  pathElements: bigint[];
  pathIndex: number;
}

let zeroHashes: Promise<bigint[]> | undefined;

/** zero[i] is the root of an all-empty subtree of height i (empty leaves are 0). */
function getZeroHashes(): Promise<bigint[]> {
  zeroHashes ??= (async () => {
    const zeros = [0n];
    for (let i = 0; i < MEMBERSHIP_DEPTH; i++) zeros.push(await poseidonHash([zeros[i]!, zeros[i]!]));
    return zeros;
  })();
  return zeroHashes;
}

/** Root of the set's tree: leaf = Poseidon(member) in the given order, empty slots 0. */
export async function merkleRoot(members: bigint[]): Promise<bigint> {
  return (await merkleWitness(members, 0)).root;
}

/**
 * Root and authentication path for the member at `index`. Only occupied nodes are hashed; empty
 * subtrees use precomputed hashes, so a small set costs a few dozen hashes, not a full tree.
 */
export async function merkleWitness(members: bigint[], index: number): Promise<MerkleWitness> {
  if (members.length === 0 || members.length > MAX_SET_SIZE) {
    throw new Error(`A set has 1 to ${MAX_SET_SIZE} members.`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= members.length)
    throw new Error('Index out of range.');
  const zeros = await getZeroHashes();
  let level = await Promise.all(members.map((m) => poseidonHash([m])));
  const pathElements: bigint[] = [];
  let position = index;
  for (let depth = 0; depth < MEMBERSHIP_DEPTH; depth++) {
    pathElements.push(level[position ^ 1] ?? zeros[depth]!);
    const next: bigint[] = [];
    for (let i = 0; i < level.length; i += 2) {
      next.push(await poseidonHash([level[i]!, level[i + 1] ?? zeros[depth]!]));
    }
    level = next;
    position >>= 1;
  }
  return { root: level[0]!, pathElements, pathIndex: index };
}
