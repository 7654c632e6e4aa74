// Anonymous membership, as the ballot circuit (circuits/ballot.circom) proves it: identities
// (Poseidon of a secret only the member holds), a fixed-depth Poseidon tree of their commitments, a
// nullifier per identity and scope, and the Groth16 proof that binds a root, a nullifier, a scope and
// one more field element (the ballot's vote hash, an approval's content hash) without saying which leaf.
// Governance ballots and workflow approvals both stand on it. Pure: no configuration, no database;
// Poseidon (shared/platform/field), snarkjs, and the Groth16 gate (the native verifier when built, else snarkjs).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { WitnessCalculatorBuilder } from 'circom_runtime';
import { utils as ffUtils } from 'ffjavascript';
import * as snarkjs from 'snarkjs';
import { FIELD_PRIME, poseidonHash, randomFieldElement } from '../platform/field';
import { verifyGroth16 } from './groth16';

/** The circuit anonymous membership is proved with: the ballot circuit. */
export const ANONYMITY_CIRCUIT = 'ballot';
/** Depth of the member tree in the circuit: up to 2^10 = 1024 identities. */
export const ANONYMITY_TREE_DEPTH = 10;
/** The same membership with, in the same proof, a credential the member holds (circuits/approval.circom). */
export const CREDENTIALED_APPROVAL_CIRCUIT = 'approval';
export const MAX_TREE_IDENTITIES = 2 ** ANONYMITY_TREE_DEPTH;
/** The circuit's public signals, in order (outputs first): the last is the bound message. */
export const ANONYMITY_PUBLIC_SIGNALS = ['root', 'nullifier', 'scope', 'voteHash'] as const;

export const DECIMAL_FIELD = /^(0|[1-9]\d{0,76})$/;

/** A decimal string that is an element of the BN254 scalar field. */
export const isFieldElement = (v: string): boolean => DECIMAL_FIELD.test(v) && BigInt(v) < FIELD_PRIME;

/** sha256 cut to 248 bits: always below the field prime, so a hash is one public signal. */
export const fieldHash = (data: string | Uint8Array): bigint =>
  BigInt(`0x${createHash('sha256').update(data).digest('hex')}`) >> 8n;

// --- Identities

export interface Identity {
  /** The secret: never leaves the member's device. Decimal field element. */
  secret: string;
  /** Poseidon(secret): what a tree holds. Decimal field element. */
  commitment: string;
}

export async function identityFromSecret(secret: string): Promise<Identity> {
  if (!isFieldElement(secret) || secret === '0')
    throw new Error('An identity secret is a non-zero field element.');
  return { secret, commitment: String(await poseidonHash([BigInt(secret)])) };
}

/** A fresh identity: 248 random bits. */
export const createIdentity = (): Promise<Identity> => identityFromSecret(String(randomFieldElement()));

export const nullifierOf = async (secret: string, scope: bigint): Promise<bigint> =>
  poseidonHash([BigInt(secret), scope]);

// --- The member tree: DEPTH levels, leaves are identity commitments in registration order, empty 0

let zeros: Promise<bigint[]> | undefined;

/** zeros[i]: the root of an empty subtree of height i. */
export function zeroHashes(): Promise<bigint[]> {
  zeros ??= (async () => {
    const z = [0n];
    for (let i = 0; i < ANONYMITY_TREE_DEPTH; i++) z.push(await poseidonHash([z[i]!, z[i]!]));
    return z;
  })();
  return zeros;
}

/** Every occupied node, level by level (levels[0] = the leaves); only occupied nodes are hashed. */
export async function memberTreeLevels(leaves: readonly bigint[]): Promise<bigint[][]> {
  if (leaves.length > MAX_TREE_IDENTITIES)
    throw new Error(`A tree holds at most ${MAX_TREE_IDENTITIES} identities.`);
  const z = await zeroHashes();
  const levels: bigint[][] = [[...leaves]];
  for (let depth = 0; depth < ANONYMITY_TREE_DEPTH; depth++) {
    const level = levels[depth]!;
    const next: bigint[] = [];
    for (let i = 0; i < Math.max(level.length, 1); i += 2)
      next.push(await poseidonHash([level[i] ?? z[depth]!, level[i + 1] ?? z[depth]!]));
    levels.push(next);
  }
  return levels;
}

export async function memberTreeRoot(leaves: readonly bigint[]): Promise<bigint> {
  return (await memberTreeLevels(leaves))[ANONYMITY_TREE_DEPTH]![0]!;
}

/** The authentication path of leaf `index`: its sibling at each level, bottom up. */
export async function memberPath(levels: readonly bigint[][], index: number): Promise<bigint[]> {
  const z = await zeroHashes();
  const path: bigint[] = [];
  let position = index;
  for (let depth = 0; depth < ANONYMITY_TREE_DEPTH; depth++) {
    path.push(levels[depth]![position ^ 1] ?? z[depth]!);
    position >>= 1;
  }
  return path;
}

// --- Proofs

export interface Groth16ProofJson {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol?: string;
  curve?: string;
}

/** The public signals a membership proof must verify against, in circuit order. */
export const membershipSignals = (s: {
  root: string;
  nullifier: string;
  scope: bigint;
  message: bigint;
}): string[] => [s.root, s.nullifier, String(s.scope), String(s.message)];

/** Groth16 verification against the circuit's verification key. Never throws. */
export async function verifyMembershipProof(
  vkey: unknown,
  proof: Groth16ProofJson,
  publicSignals: string[],
): Promise<boolean> {
  if (publicSignals.length !== ANONYMITY_PUBLIC_SIGNALS.length || !publicSignals.every(isFieldElement))
    return false;
  return verifyGroth16(vkey, publicSignals, proof);
}

// --- Proving, on the member's side

export interface MembershipArtifacts {
  wasm: Uint8Array;
  zkey: Uint8Array;
}

/** The structural shape of a loaded native prover (native-prover's CircuitProver). */
export interface NativeMembershipProver {
  prove(witness: Uint8Array): Promise<{ proof: unknown; publicSignals: string[] }>;
}

/**
 * Reads the circuit's wasm and zkey (the ballot circuit's, or `circuit`'s: the credentialed approval's)
 * from a folder (circuits/artifacts) or a service's public copies.
 */
export async function loadMembershipArtifacts(
  from: string,
  fetchImpl: typeof fetch = fetch,
  circuit: string = ANONYMITY_CIRCUIT,
): Promise<MembershipArtifacts> {
  const get = async (file: string): Promise<Uint8Array> => {
    if (!/^https?:\/\//.test(from)) return new Uint8Array(await readFile(join(from, file)));
    const res = await fetchImpl(new URL(`/circuits/${file}`, from));
    if (!res.ok) throw new Error(`GET /circuits/${file}: ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  };
  const [wasm, zkey] = await Promise.all([get(`${circuit}.wasm`), get(`${circuit}.zkey`)]);
  return { wasm, zkey };
}

interface WitnessCalculator {
  calculateWTNSBin(input: unknown, sanityCheck: boolean): Promise<Uint8Array>;
}
const calculators = new WeakMap<Uint8Array, Promise<WitnessCalculator>>();
/** The last witness asked of each calculator: one instance's memory holds one witness at a time. */
const turns = new WeakMap<Uint8Array, Promise<unknown>>();

/**
 * One compiled witness calculator per wasm (compiling it costs more than a witness), taking one
 * witness at a time: two proofs made at once would otherwise share its memory and mix their signals.
 */
async function witness(wasm: Uint8Array, input: Record<string, unknown>): Promise<Uint8Array> {
  let calc = calculators.get(wasm);
  if (!calc) {
    calc = WitnessCalculatorBuilder(wasm) as Promise<WitnessCalculator>;
    calculators.set(wasm, calc);
  }
  const ready = calc;
  const previous = turns.get(wasm) ?? Promise.resolve();
  const mine = previous
    .catch(() => undefined)
    .then(async () => (await ready).calculateWTNSBin(ffUtils.unstringifyBigInts(input), true));
  turns.set(wasm, mine);
  return mine;
}

export interface MembershipProof {
  root: string;
  nullifier: string;
  proof: Groth16ProofJson;
  publicSignals: string[];
  timings: { witnessMs: number; provingMs: number };
}

/**
 * Proves that `identity` is in the tree built from the public member list, with its nullifier for
 * `scope` and the proof bound to `message`. Throws when the identity is not in the list.
 */
export async function proveMembership(options: {
  identity: Identity;
  members: readonly string[];
  scope: bigint;
  message: bigint;
  artifacts: MembershipArtifacts;
  native?: NativeMembershipProver | undefined;
}): Promise<MembershipProof> {
  const { identity, members, scope, message, artifacts } = options;
  const index = members.indexOf(identity.commitment);
  if (index < 0) throw new Error('This identity is not in the member list.');
  const levels = await memberTreeLevels(members.map(BigInt));
  const root = String(levels[ANONYMITY_TREE_DEPTH]![0]);
  const nullifier = String(await nullifierOf(identity.secret, scope));
  const input = {
    identitySecret: identity.secret,
    pathElements: (await memberPath(levels, index)).map(String),
    pathIndex: String(index),
    scope: String(scope),
    voteHash: String(message),
  };
  const start = performance.now();
  const wtns = await witness(artifacts.wasm, input);
  const witnessMs = performance.now() - start;
  const proved = options.native
    ? await options.native.prove(wtns)
    : await snarkjs.groth16.prove({ type: 'mem', data: artifacts.zkey }, { type: 'mem', data: wtns });
  const provingMs = performance.now() - start - witnessMs;
  const expected = membershipSignals({ root, nullifier, scope, message });
  if (proved.publicSignals.join() !== expected.join())
    throw new Error('The prover returned public signals that are not this proof’s.');
  const { pi_a, pi_b, pi_c } = proved.proof as Groth16ProofJson;
  return {
    root,
    nullifier,
    proof: { pi_a, pi_b, pi_c, protocol: 'groth16', curve: 'bn128' },
    publicSignals: expected,
    timings: { witnessMs: Math.round(witnessMs), provingMs: Math.round(provingMs) },
  };
}
