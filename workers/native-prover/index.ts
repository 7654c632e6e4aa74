// Loads the native Groth16 (BN254) prover addon and wraps it in per-circuit prover objects.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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
  /** Worker threads for this proof; defaults to the machine's core count. */
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
}

/** Errors from the addon carry a stable `code`: ZKEY_INVALID, WITNESS_INVALID, IO, OUT_OF_MEMORY, ... */
export interface NativeProverError extends Error {
  code: string;
}

const packageDir = fileURLToPath(new URL('.', import.meta.url));
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

/** The prover's arithmetic for tests, or null when the addon was not built. */
export function loadNativeInternals(): NativeInternals | null {
  const addon = loadAddon();
  if (!addon) return null;
  return {
    cpu: () => addon._cpu(),
    fieldOp: (field, op, a, b, impl) => addon._fieldOp(field, op, a, b, impl),
    msmG1: (points, scalars, options) => addon._msmG1(points, scalars, options),
    msmG2: (points, scalars, options) => addon._msmG2(points, scalars, options),
  };
}
