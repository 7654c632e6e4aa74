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

export interface CircuitInfo {
  nVars: number;
  nPublic: number;
  domainSize: number;
}

/** A proving key held in native memory: warm proofs pay no parsing cost. */
export interface CircuitProver {
  readonly info: CircuitInfo;
  /** Proves from a `.wtns` file image or a raw witness (nVars little-endian 32-byte elements). */
  prove(witness: Uint8Array, options?: ProveOptions): Promise<NativeProofResult>;
  /** Frees the key now rather than at garbage collection; later proves reject. */
  release(): void;
}

export interface NativeProver {
  /** Parses and validates a snarkjs Groth16 zkey (path or file bytes) off the event loop. */
  load(zkey: string | Uint8Array, options?: ProveOptions): Promise<CircuitProver>;
  readonly defaultThreads: number;
  /** Path of the rapidsnark-compatible CLI: prover <zkey> <wtns> <proof.json> <public.json>. */
  readonly cliPath: string | null;
}

type KeyHandle = { readonly __nativeProverKey: unique symbol };

interface Addon {
  load(zkey: string | Uint8Array, threads?: number): Promise<KeyHandle>;
  prove(
    handle: KeyHandle,
    witness: Uint8Array,
    threads?: number,
  ): Promise<{ proof: string; publicSignals: string }>;
  info(handle: KeyHandle): CircuitInfo;
  release(handle: KeyHandle): void;
  defaultThreads(): number;
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
  const info = addon.info(handle);
  return {
    info,
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

/** The native prover, or null when the addon was not built on this machine. */
export function loadNativeProver(): NativeProver | null {
  if (cached !== undefined) return cached;
  const addonPath = join(releaseDir, 'native_prover.node');
  if (!existsSync(addonPath)) {
    cached = null;
    return cached;
  }
  const addon = createRequire(import.meta.url)(addonPath) as Addon;
  const cli = join(releaseDir, 'prover');
  cached = {
    async load(zkey, options) {
      const handle = await addon.load(zkey, checkThreads(options?.threads));
      return wrap(addon, handle);
    },
    defaultThreads: addon.defaultThreads(),
    cliPath: existsSync(cli) ? cli : null,
  };
  return cached;
}
