// Groth16 prover backends: snarkjs in-process (always available) and an external rapidsnark binary.
// Both compute the witness with the circuit's wasm; the backend only changes who does the proving.
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { WitnessCalculatorBuilder } from 'circom_runtime';
import { utils as ffUtils } from 'ffjavascript';
import * as snarkjs from 'snarkjs';
import { AppError } from '../platform/errors';
import { env } from '../platform/env';
import { logger } from '../platform/log';
import { artifactPaths, circuitManifest } from './artifacts';
import { getPolicy } from './policies';
import type { CircuitInput, PolicyId } from './policies';
import type { Groth16Proof } from './verify';
import { groth16ProofSchema, publicSignalsSchema, verifyPolicyProof } from './verify';

const execFileAsync = promisify(execFile);

export interface ProveTimings {
  witnessMs: number;
  provingMs: number;
}

export interface ProveOutput {
  proof: Groth16Proof;
  publicSignals: string[];
  timings: ProveTimings;
  /** The backend that made this proof, when it is not the one asked (a fallback). */
  provedBy?: string;
}

export type ProveStage = 'witness' | 'proving' | 'done';
/** Called as each stage starts; `percent` is a coarse figure for job progress. */
export type ProveProgress = (event: { stage: ProveStage; percent: number }) => void;

export interface ProverBackend {
  readonly name: string;
  prove(policyId: PolicyId, circuitInput: CircuitInput, onProgress?: ProveProgress): Promise<ProveOutput>;
  /** Loads what the backend keeps per circuit ahead of the first proof (native: the key and its tables). */
  warm?(policyId: PolicyId): Promise<void>;
}

export type ProverBackendKind = 'auto' | 'snarkjs' | 'rapidsnark' | 'native';

interface LoadedCircuit {
  wasm: Uint8Array;
  zkey: Uint8Array;
}

const loaded = new Map<string, Promise<LoadedCircuit>>();

/** The wasm and zkey stay in memory after the first proof: later proofs skip the disk. */
function loadCircuit(circuit: string): Promise<LoadedCircuit> {
  let entry = loaded.get(circuit);
  if (!entry) {
    const paths = artifactPaths(circuit);
    entry = Promise.all([readFile(paths.wasm), readFile(paths.zkey)]).then(([wasm, zkey]) => ({
      wasm: new Uint8Array(wasm),
      zkey: new Uint8Array(zkey),
    }));
    entry.catch(() => loaded.delete(circuit));
    loaded.set(circuit, entry);
  }
  return entry;
}

/** Loads a circuit's artifacts ahead of the first proof (e.g. at prover start). */
export async function warmCircuit(policyId: PolicyId): Promise<void> {
  await loadCircuit(getPolicy(policyId).circuit);
}

/**
 * The circuit's own asserts fail when the inputs do not satisfy it; `check` catches that before,
 * so reaching here means the input was built wrongly or altered in transit.
 */
function witnessFailed(policyId: PolicyId, err: unknown): AppError {
  const assertFailed = err instanceof Error && /assert failed/i.test(err.message);
  return assertFailed
    ? new AppError(422, 'policy_not_satisfied', `The inputs do not satisfy the ${policyId} policy circuit.`)
    : new AppError(400, 'invalid_circuit_input', `The ${policyId} circuit input could not be evaluated.`);
}

interface WitnessCalculator {
  calculateWTNSBin(input: unknown, sanityCheck: boolean): Promise<Uint8Array>;
}

// One compiled witness calculator per circuit, reused across proofs: compiling the circuit's wasm on
// every call cost more than computing the witness itself. Calls on one calculator run one at a time.
const { unstringifyBigInts } = ffUtils;
const calculators = new WeakMap<Uint8Array, { ready: Promise<WitnessCalculator>; tail: Promise<unknown> }>();

function calculatorFor(wasm: Uint8Array) {
  let entry = calculators.get(wasm);
  if (!entry) {
    entry = { ready: WitnessCalculatorBuilder(wasm) as Promise<WitnessCalculator>, tail: Promise.resolve() };
    calculators.set(wasm, entry);
  }
  return entry;
}

async function computeWitness(
  policyId: PolicyId,
  wasm: Uint8Array,
  circuitInput: CircuitInput,
  target: snarkjs.FileRef,
): Promise<void> {
  const entry = calculatorFor(wasm);
  const run = entry.tail.then(async () =>
    (await entry.ready).calculateWTNSBin(unstringifyBigInts(circuitInput), true),
  );
  entry.tail = run.catch(() => undefined);
  let bin: Uint8Array;
  try {
    bin = await run;
  } catch (err) {
    calculators.delete(wasm); // a failed run may leave the instance in any state: compile afresh next time
    throw witnessFailed(policyId, err);
  }
  if (typeof target === 'string') await writeFile(target, bin);
  else if (target instanceof Uint8Array) throw new TypeError('witness target must be a path or a mem file');
  else target.data = bin;
}

/** The public signals a proof of this input must carry: the result 1, then the input's public values. */
export function expectedPublicSignals(policyId: PolicyId, circuitInput: CircuitInput): string[] {
  const names = circuitManifest(getPolicy(policyId).circuit).publicSignals;
  return names.map((name) => {
    if (name === 'result') return '1';
    // An array signal's element, `fields[2]`, as circom names it.
    const element = /^([A-Za-z_]\w*)\[(\d+)\]$/.exec(name);
    if (element) return String((circuitInput[element[1]!] as string[] | undefined)?.[Number(element[2])]);
    return String(circuitInput[name]);
  });
}

const elapsed = (start: number) => Math.round((performance.now() - start) * 100) / 100;

export function snarkjsBackend(): ProverBackend {
  return {
    name: 'snarkjs',
    async prove(policyId, circuitInput, onProgress) {
      const circuit = await loadCircuit(getPolicy(policyId).circuit);
      onProgress?.({ stage: 'witness', percent: 0 });
      const witnessStart = performance.now();
      const wtns: snarkjs.MemFile = { type: 'mem' };
      await computeWitness(policyId, circuit.wasm, circuitInput, wtns);
      const witnessMs = elapsed(witnessStart);
      onProgress?.({ stage: 'proving', percent: 20 });
      const provingStart = performance.now();
      const { proof, publicSignals } = await snarkjs.groth16.prove({ type: 'mem', data: circuit.zkey }, wtns);
      const provingMs = elapsed(provingStart);
      onProgress?.({ stage: 'done', percent: 100 });
      return { proof: groth16ProofSchema.parse(proof), publicSignals, timings: { witnessMs, provingMs } };
    },
  };
}

export interface RapidsnarkOptions {
  bin: string;
  timeoutMs?: number;
}

/**
 * rapidsnark's standard CLI: `prover <zkey> <wtns> <proof.json> <public.json>`. Its output is
 * verified before it is returned: a foreign binary's word is not taken for a proof.
 */
export function rapidsnarkBackend(options: RapidsnarkOptions): ProverBackend {
  const { bin, timeoutMs = env.RAPIDSNARK_TIMEOUT_MS } = options;
  return {
    name: 'rapidsnark',
    async prove(policyId, circuitInput, onProgress) {
      const policy = getPolicy(policyId);
      const circuit = await loadCircuit(policy.circuit);
      const dir = await mkdtemp(join(tmpdir(), 'px-rapidsnark-'));
      try {
        const files = {
          wtns: join(dir, 'witness.wtns'),
          proof: join(dir, 'proof.json'),
          public: join(dir, 'public.json'),
        };
        onProgress?.({ stage: 'witness', percent: 0 });
        const witnessStart = performance.now();
        await computeWitness(policyId, circuit.wasm, circuitInput, files.wtns);
        const witnessMs = elapsed(witnessStart);
        onProgress?.({ stage: 'proving', percent: 20 });
        const provingStart = performance.now();
        const zkeyPath = artifactPaths(policy.circuit).zkey;
        try {
          await execFileAsync(bin, [zkeyPath, files.wtns, files.proof, files.public], {
            timeout: timeoutMs,
            maxBuffer: 1024 * 1024,
          });
        } catch (err) {
          const e = err as { code?: unknown; signal?: unknown };
          throw new Error(`rapidsnark failed (exit ${String(e.code ?? e.signal ?? 'unknown')})`);
        }
        const proof = groth16ProofSchema.parse(JSON.parse(await readFile(files.proof, 'utf8')));
        const publicSignals = publicSignalsSchema.parse(JSON.parse(await readFile(files.public, 'utf8')));
        const provingMs = elapsed(provingStart);
        // A valid proof of some other statement is no answer: the signals must be this input's.
        if (publicSignals.join() !== expectedPublicSignals(policyId, circuitInput).join()) {
          throw new Error('rapidsnark returned public signals that do not match the input');
        }
        const check = await verifyPolicyProof(policyId, proof, publicSignals);
        if (!check.valid)
          throw new Error(`rapidsnark returned a proof that does not verify (${check.reason})`);
        onProgress?.({ stage: 'done', percent: 100 });
        return { proof, publicSignals, timings: { witnessMs, provingMs } };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** The shape of the project's native prover (native-prover), kept structural so shared/ needs no import of it. */
export interface NativeCircuitProver {
  prove(witness: Uint8Array): Promise<{ proof: unknown; publicSignals: string[] }>;
}
export interface NativeProverLike {
  /** `precompute`: native-prover's LoadOptions (the shifted tables: built in the background by default). */
  load(
    zkey: Uint8Array,
    options?: { precompute?: 'eager' | 'background' | 'off' },
  ): Promise<NativeCircuitProver>;
}

/**
 * Witness from the circuit wasm, proof from the native prover with the zkey loaded once per
 * circuit. Its output is checked like rapidsnark's: the right signals and a proof that verifies.
 */
export interface NativeBackendOptions {
  /** Verify every native proof before it is returned (NATIVE_PROOF_CHECK). */
  check?: boolean;
  /**
   * The shifted tables of each key (native-prover's `precompute`): a process that proves once or twice
   * (a command line) takes 'off', as building them costs more CPU than the proofs they would speed up.
   */
  precompute?: 'eager' | 'background' | 'off';
  /** Proves instead when a native proof fails its check or the native prover fails. */
  fallback?: ProverBackend;
}

export function nativeBackend(native: NativeProverLike, options: NativeBackendOptions = {}): ProverBackend {
  const check = options.check ?? env.NATIVE_PROOF_CHECK;
  const provers = new Map<string, Promise<NativeCircuitProver>>();
  const proverFor = (circuit: string, zkey: Uint8Array) => {
    let prover = provers.get(circuit);
    if (!prover) {
      prover = native.load(zkey, options.precompute ? { precompute: options.precompute } : undefined);
      prover.catch(() => provers.delete(circuit));
      provers.set(circuit, prover);
    }
    return prover;
  };
  const proveNative = async (
    policyId: PolicyId,
    circuitInput: CircuitInput,
    onProgress?: ProveProgress,
  ): Promise<ProveOutput> => {
    const policy = getPolicy(policyId);
    const circuit = await loadCircuit(policy.circuit);
    const prover = await proverFor(policy.circuit, circuit.zkey);
    onProgress?.({ stage: 'witness', percent: 0 });
    const witnessStart = performance.now();
    const wtns: snarkjs.MemFile = { type: 'mem' };
    await computeWitness(policyId, circuit.wasm, circuitInput, wtns);
    const witnessMs = elapsed(witnessStart);
    onProgress?.({ stage: 'proving', percent: 20 });
    const provingStart = performance.now();
    const result = await prover.prove(wtns.data!);
    const provingMs = elapsed(provingStart);
    const proof = groth16ProofSchema.parse(result.proof);
    const publicSignals = publicSignalsSchema.parse(result.publicSignals);
    if (publicSignals.join() !== expectedPublicSignals(policyId, circuitInput).join()) {
      throw new NativeProofRejected('returned public signals that do not match the input');
    }
    if (check) {
      const verdict = await verifyPolicyProof(policyId, proof, publicSignals);
      if (!verdict.valid)
        throw new NativeProofRejected(`returned a proof that does not verify (${verdict.reason})`);
    }
    onProgress?.({ stage: 'done', percent: 100 });
    return { proof, publicSignals, timings: { witnessMs, provingMs } };
  };
  return {
    name: 'native',
    async warm(policyId) {
      const policy = getPolicy(policyId);
      await proverFor(policy.circuit, (await loadCircuit(policy.circuit)).zkey);
    },
    async prove(policyId, circuitInput, onProgress) {
      try {
        return await proveNative(policyId, circuitInput, onProgress);
      } catch (err) {
        // Input errors (4xx) are the caller's; anything else is the native prover's, and the fallback
        // proves instead while the failure is logged for the operator.
        if (!options.fallback || (err instanceof AppError && err.status < 500)) throw err;
        logger.warn(
          { policyId, err: (err as Error).message },
          'native prover failed; proving this one with the fallback backend',
        );
        const out = await options.fallback.prove(policyId, circuitInput, onProgress);
        return { ...out, provedBy: out.provedBy ?? options.fallback.name };
      }
    },
  };
}

/** A native proof that failed its own checks. */
export class NativeProofRejected extends Error {
  constructor(what: string) {
    super(`The native prover ${what}.`);
  }
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export interface SelectOptions {
  kind?: ProverBackendKind;
  rapidsnarkBin?: string | undefined;
  /** The project's native prover, when it is built; `auto` prefers it. */
  native?: ProverBackend | undefined;
}

/** Picks the configured backend; a backend asked for by name but unusable is a start-up error. */
export function selectProverBackend(options: SelectOptions = {}): ProverBackend {
  const kind = options.kind ?? env.PROVER_BACKEND;
  const bin = 'rapidsnarkBin' in options ? options.rapidsnarkBin : env.RAPIDSNARK_BIN;
  switch (kind) {
    case 'snarkjs':
      return snarkjsBackend();
    case 'rapidsnark':
      if (!bin)
        throw new Error('PROVER_BACKEND=rapidsnark needs RAPIDSNARK_BIN (path of the prover binary).');
      if (!isExecutable(bin)) throw new Error(`RAPIDSNARK_BIN ${bin} is not an executable file.`);
      return rapidsnarkBackend({ bin });
    case 'native':
      if (!options.native) throw new Error('PROVER_BACKEND=native, but no native prover is built.');
      return options.native;
    case 'auto':
      if (options.native) return options.native;
      if (bin && isExecutable(bin)) return rapidsnarkBackend({ bin });
      return snarkjsBackend();
  }
}
