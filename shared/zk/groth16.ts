// The one Groth16 verification gate: the native verifier (BN254 pairing in the project's addon, on
// worker threads, off the event loop) when the addon is built, else snarkjs. Imports no configuration,
// so the offline ballot verifier goes through it too.
import * as snarkjs from 'snarkjs';
import { moduleFile } from '../platform/paths';

/** The shape of native-prover's NativeVerifier, kept structural like the prover's. */
export interface Groth16VerifierLike {
  verify(vkey: unknown, publicSignals: unknown, proof: unknown): Promise<boolean>;
}

export type Groth16Backend = 'native' | 'snarkjs';

let native: Promise<Groth16VerifierLike | null> | undefined;

/**
 * The native verifier from the project's native-prover package. A checkout or machine without the
 * built addon (or with one built before it could verify) gets null, and snarkjs verifies instead.
 */
function nativeVerifier(): Promise<Groth16VerifierLike | null> {
  // By its file, as the prover loads it: the package's entry is TypeScript, which a built process (plain
  // node on dist/) cannot import, and would silently verify every proof with snarkjs instead.
  native ??= import(moduleFile('native-prover/index.ts').href).then(
    (mod: { loadNativeVerifier?: () => Groth16VerifierLike | null }) => mod.loadNativeVerifier?.() ?? null,
    () => null,
  );
  return native;
}

/** Replaces the verifier: null forces snarkjs (for tests and comparisons); undefined restores the default. */
export function useGroth16Verifier(verifier: Groth16VerifierLike | null | undefined): void {
  native = verifier === undefined ? undefined : Promise.resolve(verifier);
}

export async function groth16Backend(): Promise<Groth16Backend> {
  return (await nativeVerifier()) ? 'native' : 'snarkjs';
}

async function verifyWithSnarkjs(vkey: unknown, publicSignals: unknown, proof: unknown): Promise<boolean> {
  try {
    return await snarkjs.groth16.verify(vkey, publicSignals as string[], proof);
  } catch {
    // Coordinates that are not curve points make the curve library throw rather than return false.
    return false;
  }
}

/**
 * Whether the proof holds for the key and public signals. Never throws: input neither verifier can
 * take is false. The native verifier accepts nothing snarkjs rejects; it is stricter in taking only the
 * encoding snarkjs itself writes (affine, z = 1, coordinates below p) and exactly the key's count of
 * public signals.
 */
export async function verifyGroth16(vkey: unknown, publicSignals: unknown, proof: unknown): Promise<boolean> {
  const verifier = await nativeVerifier();
  if (!verifier) return verifyWithSnarkjs(vkey, publicSignals, proof);
  try {
    return await verifier.verify(vkey, publicSignals, proof);
  } catch (err) {
    // A proof or signals not in the snarkjs shape can never verify. Anything else (a key the native
    // verifier does not take, memory) is the verifier's problem, and snarkjs decides instead.
    if ((err as { code?: unknown }).code === 'VERIFY_INPUT_INVALID') return false;
    return verifyWithSnarkjs(vkey, publicSignals, proof);
  }
}
