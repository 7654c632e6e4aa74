// Loads the native Groth16 (BN254) addon: per-circuit prover objects, and a verifier for snarkjs keys and proofs.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface Groth16Proof {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol: 'groth16';
  curve: 'bn128';
}

export interface NativeProofResult {
  proof: Groth16Proof;
  publicSignals: string[];
}

export interface ProveOptions {
  /**
   * Worker threads for this proof; defaults to the machine's core count. Proofs running at once share
   * them: a proof that starts while k are running (itself included) takes threads / k, at least one.
   */
  threads?: number;
}

export interface LoadOptions extends ProveOptions {
  /**
   * When to build the key's shifted base tables (several times the key's points in memory, built in
   * about 256 point doublings per base; proofs on a small key run about twice as fast with them):
   * 'background' (default) resolves the load at once and swaps them in when built, 'eager' builds them
   * before the load resolves, 'off' never builds them.
   */
  precompute?: 'eager' | 'background' | 'off';
}

export interface CircuitInfo {
  nVars: number;
  nPublic: number;
  domainSize: number;
  /** Whether proofs now use the shifted tables. */
  precomputed: boolean;
  /** Memory held by the MSM bases and their copies. */
  tableBytes: number;
}

/** A proving key held in native memory: warm proofs pay no parsing cost. */
export interface CircuitProver {
  /** Read afresh on each access: `precomputed` turns true once background tables are in. */
  readonly info: CircuitInfo;
  /** Proves from a `.wtns` file image or a raw witness (nVars little-endian 32-byte elements). */
  prove(witness: Uint8Array, options?: ProveOptions): Promise<NativeProofResult>;
  /** Frees the key now rather than at garbage collection; later proves reject. */
  release(): void;
}

export interface NativeProver {
  /** Parses and validates a snarkjs Groth16 zkey (path or file bytes) off the event loop. */
  load(zkey: string | Uint8Array, options?: LoadOptions): Promise<CircuitProver>;
  readonly defaultThreads: number;
  /** Path of the rapidsnark-compatible CLI: prover <zkey> <wtns> <proof.json> <public.json>. */
  readonly cliPath: string | null;
}

type KeyHandle = { readonly __nativeProverKey: unique symbol };
type VerifyingKeyHandle = { readonly __nativeVerifyingKey: unique symbol };

export interface NativeVerifier {
  /**
   * Whether the proof holds for the key and public signals, checked off the event loop: points on their
   * curves and B in G2's subgroup, signals below the group order and as many as the key takes, then
   * e(A, B) = e(alpha, beta) e(vk_x, gamma) e(C, delta). Only the affine encoding snarkjs writes is
   * taken (z = 1, coordinates below p); anything else is false. Rejects with `code` VERIFY_INPUT_INVALID
   * when the signals or proof are not decimal strings in the snarkjs shape, VKEY_INVALID for such a key.
   */
  verify(vkey: unknown, publicSignals: unknown, proof: unknown): Promise<boolean>;
}

interface Addon {
  load(zkey: string | Uint8Array, threads?: number, precompute?: string): Promise<KeyHandle>;
  prove(
    handle: KeyHandle,
    witness: Uint8Array,
    threads?: number,
  ): Promise<{ proof: string; publicSignals: string }>;
  info(handle: KeyHandle): CircuitInfo;
  release(handle: KeyHandle): void;
  defaultThreads(): number;
  _fieldOp(field: string, op: string, a: Uint8Array, b?: Uint8Array, impl?: string): Uint8Array;
  _msmG1(points: Uint8Array, scalars: Uint8Array, options?: MsmOptions): Uint8Array;
  _msmG2(points: Uint8Array, scalars: Uint8Array, options?: MsmOptions): Uint8Array;
  _cpu(): { adx: boolean };
  prepareVerifyingKey?(numbers: string): Promise<VerifyingKeyHandle>;
  verify?(handle: VerifyingKeyHandle, publicSignals: string, proof: string): Promise<string>;
  _pairingCheck?(g1: Uint8Array, g2: Uint8Array): boolean;
}

export type FieldOp =
  'add' | 'sub' | 'neg' | 'mul' | 'square' | 'inverse' | 'toMontgomery' | 'fromMontgomery';

export interface MsmOptions {
  /** Window bits (2..15); the prover's own plan when left out. */
  c?: number;
  /** Shifted copies of the bases (1 = plain Pippenger); with `c` left out, the plan's. */
  copies?: number;
  threads?: number;
}

/**
 * The arithmetic under the prover, for tests that check it against independent references. Field
 * elements are 32-byte little-endian values below the modulus in the stored (Montgomery) form, except
 * the input of toMontgomery; points are affine in the zkey layout ((0, 0) is infinity); MSM scalars are
 * 32-byte little-endian standard-form values below the group order.
 */
export interface NativeInternals {
  cpu(): { adx: boolean };
  fieldOp(
    field: 'fq' | 'fr',
    op: FieldOp,
    a: Uint8Array,
    b?: Uint8Array,
    impl?: 'auto' | 'portable' | 'adx',
  ): Uint8Array;
  msmG1(points: Uint8Array, scalars: Uint8Array, options?: MsmOptions): Uint8Array;
  msmG2(points: Uint8Array, scalars: Uint8Array, options?: MsmOptions): Uint8Array;
  /** Whether the product of e(g1[i], g2[i]) is one; G2 points must be in the subgroup. */
  pairingCheck(g1: Uint8Array, g2: Uint8Array): boolean;
  /** The verifier's verdict with its reason: '' when the proof holds, else e.g. 'not_in_subgroup'. */
  verifyReason(vkey: unknown, publicSignals: unknown, proof: unknown): Promise<string>;
}

/**
 * Errors from the addon carry a stable `code`: ZKEY_INVALID, WITNESS_INVALID, IO, OUT_OF_MEMORY,
 * VKEY_INVALID, VERIFY_INPUT_INVALID, ...
 */
export interface NativeProverError extends Error {
  code: string;
}

// This package's folder, found by its name: the folder of this file under tsx, but not in a build
// (dist/native-prover/index.js), whose addon is still the one node-gyp built here.
const packageDir = dirname(
  createRequire(import.meta.url).resolve('@proof-exchange/native-prover/package.json'),
);
const releaseDir = join(packageDir, 'build', 'Release');

let cached: NativeProver | null | undefined;

function checkThreads(threads: number | undefined): number | undefined {
  if (threads === undefined) return undefined;
  if (!Number.isInteger(threads) || threads < 1 || threads > 1024) {
    throw new RangeError('threads must be an integer from 1 to 1024');
  }
  return threads;
}

function wrap(addon: Addon, handle: KeyHandle): CircuitProver {
  let released = false;
  let last = addon.info(handle);
  return {
    get info() {
      if (!released) last = addon.info(handle);
      return last;
    },
    async prove(witness, options) {
      if (released) throw Object.assign(new Error('circuit prover was released'), { code: 'RELEASED' });
      const threads = checkThreads(options?.threads);
      const out = await addon.prove(handle, witness, threads);
      return {
        proof: JSON.parse(out.proof) as Groth16Proof,
        publicSignals: JSON.parse(out.publicSignals) as string[],
      };
    },
    release() {
      if (released) return;
      released = true;
      addon.release(handle);
    },
  };
}

let addonCache: Addon | null | undefined;

function loadAddon(): Addon | null {
  if (addonCache !== undefined) return addonCache;
  const addonPath = join(releaseDir, 'native_prover.node');
  addonCache = existsSync(addonPath) ? (createRequire(import.meta.url)(addonPath) as Addon) : null;
  return addonCache;
}

/** The native prover, or null when the addon was not built on this machine. */
export function loadNativeProver(): NativeProver | null {
  if (cached !== undefined) return cached;
  const addon = loadAddon();
  if (!addon) {
    cached = null;
    return cached;
  }
  const cli = join(releaseDir, 'prover');
  cached = {
    async load(zkey, options) {
      const precompute = options?.precompute;
      if (precompute !== undefined && !['eager', 'background', 'off'].includes(precompute)) {
        throw new RangeError("precompute must be 'eager', 'background' or 'off'");
      }
      const handle = await addon.load(zkey, checkThreads(options?.threads), precompute);
      return wrap(addon, handle);
    },
    defaultThreads: addon.defaultThreads(),
    cliPath: existsSync(cli) ? cli : null,
  };
  return cached;
}

// ---- Verification: the JSON shapes are checked here, the numbers and points in the addon.

const DECIMAL = /^\d{1,78}$/;

function inputError(code: string, message: string): NativeProverError {
  return Object.assign(new TypeError(message), { code });
}

function decimals(value: unknown, count: number, code: string, what: string): string[] {
  if (!Array.isArray(value) || value.length !== count) {
    throw inputError(code, `${what} must be an array of ${count} decimal strings`);
  }
  for (const v of value) {
    if (typeof v !== 'string' || !DECIMAL.test(v)) {
      throw inputError(code, `${what} must be an array of ${count} decimal strings`);
    }
  }
  return value as string[];
}

function g2Coordinates(value: unknown, code: string, what: string): string[] {
  if (!Array.isArray(value) || value.length !== 3) {
    throw inputError(code, `${what} must be three [c0, c1] pairs of decimal strings`);
  }
  return value.flatMap((pair: unknown, i) => decimals(pair, 2, code, `${what}[${i}]`));
}

function field(obj: unknown, key: string): unknown {
  return typeof obj === 'object' && obj !== null ? (obj as Record<string, unknown>)[key] : undefined;
}

/** The key's coordinates in the addon's order: alpha, beta, gamma, delta, then IC. */
function vkeyNumbers(vkey: unknown): string {
  const code = 'VKEY_INVALID';
  if (typeof vkey !== 'object' || vkey === null) throw inputError(code, 'verification key must be an object');
  const protocol = field(vkey, 'protocol');
  const curve = field(vkey, 'curve');
  if (protocol !== undefined && protocol !== 'groth16')
    throw inputError(code, 'verification key is not groth16');
  if (curve !== undefined && curve !== 'bn128') throw inputError(code, 'verification key is not for bn128');
  const ic = field(vkey, 'IC');
  if (!Array.isArray(ic) || ic.length < 1 || ic.length > 1025) {
    throw inputError(code, 'verification key IC must hold 1 to 1025 points');
  }
  const nPublic = field(vkey, 'nPublic');
  if (nPublic !== undefined && nPublic !== ic.length - 1) {
    throw inputError(code, 'verification key nPublic does not match its IC points');
  }
  return [
    ...decimals(field(vkey, 'vk_alpha_1'), 3, code, 'vk_alpha_1'),
    ...g2Coordinates(field(vkey, 'vk_beta_2'), code, 'vk_beta_2'),
    ...g2Coordinates(field(vkey, 'vk_gamma_2'), code, 'vk_gamma_2'),
    ...g2Coordinates(field(vkey, 'vk_delta_2'), code, 'vk_delta_2'),
    ...ic.flatMap((p: unknown, i) => decimals(p, 3, code, `IC[${i}]`)),
  ].join(',');
}

function proofNumbers(proof: unknown): string {
  const code = 'VERIFY_INPUT_INVALID';
  if (typeof proof !== 'object' || proof === null) throw inputError(code, 'proof must be an object');
  return [
    ...decimals(field(proof, 'pi_a'), 3, code, 'pi_a'),
    ...g2Coordinates(field(proof, 'pi_b'), code, 'pi_b'),
    ...decimals(field(proof, 'pi_c'), 3, code, 'pi_c'),
  ].join(',');
}

function signalNumbers(publicSignals: unknown): string {
  const n = Array.isArray(publicSignals) ? publicSignals.length : -1;
  if (n < 0 || n > 1024)
    throw inputError('VERIFY_INPUT_INVALID', 'public signals must be an array of at most 1024');
  return decimals(publicSignals, n, 'VERIFY_INPUT_INVALID', 'public signals').join(',');
}

type VerifyAddon = Addon & Required<Pick<Addon, 'prepareVerifyingKey' | 'verify' | '_pairingCheck'>>;

/** An addon built before verification was added has no verify: treat it as absent for verification. */
function verifyAddon(): VerifyAddon | null {
  const addon = loadAddon();
  return addon && typeof addon.verify === 'function' && typeof addon.prepareVerifyingKey === 'function'
    ? (addon as VerifyAddon)
    : null;
}

// Prepared keys by their coordinates, so a changed key object is never verified against stale tables.
const PREPARED_KEYS_MAX = 32;
const preparedKeys = new Map<string, Promise<VerifyingKeyHandle>>();

function preparedKey(addon: VerifyAddon, vkey: unknown): Promise<VerifyingKeyHandle> {
  const numbers = vkeyNumbers(vkey);
  let handle = preparedKeys.get(numbers);
  if (!handle) {
    if (preparedKeys.size >= PREPARED_KEYS_MAX) preparedKeys.delete(preparedKeys.keys().next().value!);
    handle = addon.prepareVerifyingKey(numbers);
    handle.catch(() => preparedKeys.delete(numbers));
    preparedKeys.set(numbers, handle);
  }
  return handle;
}

async function verifyReason(addon: VerifyAddon, vkey: unknown, publicSignals: unknown, proof: unknown) {
  const signals = signalNumbers(publicSignals);
  const coords = proofNumbers(proof);
  return addon.verify(await preparedKey(addon, vkey), signals, coords);
}

let verifierCache: NativeVerifier | null | undefined;

/** The native Groth16 verifier, or null when the addon (with verification) was not built. */
export function loadNativeVerifier(): NativeVerifier | null {
  if (verifierCache !== undefined) return verifierCache;
  const addon = verifyAddon();
  verifierCache = addon
    ? {
        verify: async (vkey, publicSignals, proof) =>
          (await verifyReason(addon, vkey, publicSignals, proof)) === '',
      }
    : null;
  return verifierCache;
}

/** The prover's arithmetic for tests, or null when the addon was not built. */
export function loadNativeInternals(): NativeInternals | null {
  const addon = verifyAddon();
  if (!addon) return null;
  return {
    cpu: () => addon._cpu(),
    fieldOp: (field, op, a, b, impl) => addon._fieldOp(field, op, a, b, impl),
    msmG1: (points, scalars, options) => addon._msmG1(points, scalars, options),
    msmG2: (points, scalars, options) => addon._msmG2(points, scalars, options),
    pairingCheck: (g1, g2) => addon._pairingCheck(g1, g2),
    verifyReason: (vkey, publicSignals, proof) => verifyReason(addon, vkey, publicSignals, proof),
  };
}
