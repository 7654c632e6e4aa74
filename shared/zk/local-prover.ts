// A prover for a process that proves for itself (a holder's command line, a test): the native prover
// when it is built (snarkjs checks nothing it returns is wrong: a failed check falls back), else snarkjs.
import { nativeBackend, snarkjsBackend } from './backends';
import type { NativeProverLike, ProverBackend } from './backends';
import { moduleFile } from '../platform/paths';

let local: Promise<ProverBackend> | undefined;

export function localProverBackend(): Promise<ProverBackend> {
  local ??= (async () => {
    try {
      const specifier = moduleFile('native-prover/index.ts').href;
      const mod = (await import(specifier)) as { loadNativeProver?: () => NativeProverLike | null };
      const native = mod.loadNativeProver?.();
      if (native) return nativeBackend(native, { fallback: snarkjsBackend() });
    } catch {
      // Not built here: snarkjs proves the same statements, slower.
    }
    return snarkjsBackend();
  })();
  return local;
}
