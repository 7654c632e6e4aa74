// A prover for a process that proves for itself (a holder's command line, a test): the native prover
// when it is built (snarkjs checks nothing it returns is wrong: a failed check falls back), else snarkjs.
import { nativeBackend, snarkjsBackend } from './backends';
import type { NativeProverLike, ProverBackend } from './backends';
import type { NativeMembershipProver } from './anonymity';
import { moduleFile } from '../platform/paths';

let local: Promise<ProverBackend> | undefined;
let nativeModule: Promise<NativeProverLike | null> | undefined;

/** This checkout's native prover, when its addon is built; null when not. */
function localNative(): Promise<NativeProverLike | null> {
  nativeModule ??= (async () => {
    try {
      const mod = (await import(moduleFile('native-prover/index.ts').href)) as {
        loadNativeProver?: () => NativeProverLike | null;
      };
      return mod.loadNativeProver?.() ?? null;
    } catch {
      return null;
    }
  })();
  return nativeModule;
}

/**
 * The native prover loaded with one circuit's key, for a client that proves with artifacts it fetched
 * itself (an approver's command line); undefined where the addon is not built or refuses the key, and
 * the client proves with snarkjs.
 */
export async function localNativeProver(zkey: Uint8Array): Promise<NativeMembershipProver | undefined> {
  const native = await localNative();
  if (!native) return undefined;
  try {
    // One proof, or a few: the shifted tables would cost more CPU than they save.
    return await native.load(zkey, { precompute: 'off' });
  } catch {
    return undefined;
  }
}

export function localProverBackend(): Promise<ProverBackend> {
  local ??= (async () => {
    const native = await localNative();
    // Not built here: snarkjs proves the same statements, slower.
    // A process that proves for itself proves a few times: no shifted tables built for later proofs.
    return native
      ? nativeBackend(native, { fallback: snarkjsBackend(), precompute: 'off' })
      : snarkjsBackend();
  })();
  return local;
}
