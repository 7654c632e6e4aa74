// Type declarations for the untyped zk libraries: only the parts this project calls.

declare module 'snarkjs' {
  export type MemFile = { type: 'mem'; data?: Uint8Array };
  export type FileRef = string | MemFile | Uint8Array;
  export interface Logger {
    debug(msg: string): void;
    info(msg: string): void;
    warn(msg: string): void;
    error(msg: string): void;
  }
  export interface Groth16Proof {
    pi_a: string[];
    pi_b: string[][];
    pi_c: string[];
    protocol: string;
    curve: string;
  }
  /** A point in one of ffjavascript's own representations: opaque outside its group. */
  export type CurvePoint = Uint8Array;
  export interface CurveGroup {
    g: CurvePoint;
    fromRprLEM(buffer: Uint8Array, offset: number): CurvePoint;
    eq(a: CurvePoint, b: CurvePoint): boolean;
    neg(a: CurvePoint): CurvePoint;
  }
  export interface Curve {
    G1: CurveGroup;
    G2: CurveGroup;
    /** e(a1, b1) · e(a2, b2) · … = 1 for (G1, G2) pairs. */
    pairingEq(...points: CurvePoint[]): Promise<boolean>;
    terminate(): Promise<void>;
  }
  export const groth16: {
    prove(
      zkey: FileRef,
      witness: FileRef,
      logger?: Logger,
    ): Promise<{ proof: Groth16Proof; publicSignals: string[] }>;
    verify(vkey: unknown, publicSignals: unknown, proof: unknown, logger?: Logger): Promise<boolean>;
  };
  export const wtns: {
    calculate(
      input: unknown,
      wasm: FileRef,
      wtns: FileRef,
      options?: { sanityCheck?: boolean },
    ): Promise<void>;
    check(r1cs: FileRef, wtns: FileRef, logger?: Logger): Promise<boolean>;
  };
  export const r1cs: {
    info(
      r1cs: FileRef,
      logger?: Logger,
    ): Promise<{
      nConstraints: number;
      nVars: number;
      nOutputs: number;
      nPubInputs: number;
      nPrvInputs: number;
    }>;
  };
  export const powersOfTau: {
    newAccumulator(curve: Curve, power: number, file: string, logger?: Logger): Promise<unknown>;
    contribute(
      oldFile: string,
      newFile: string,
      name: string,
      entropy: string,
      logger?: Logger,
    ): Promise<unknown>;
    preparePhase2(oldFile: string, newFile: string, logger?: Logger): Promise<void>;
  };
  export const zKey: {
    newZKey(r1cs: FileRef, ptau: FileRef, zkey: FileRef, logger?: Logger): Promise<unknown>;
    contribute(
      oldZkey: FileRef,
      newZkey: FileRef,
      name: string,
      entropy: string,
      logger?: Logger,
    ): Promise<unknown>;
    /** A random-beacon contribution: beaconHash is hex, hashed 2^numIterationsExp (10 to 63) times; false when refused. */
    beacon(
      oldZkey: FileRef,
      newZkey: FileRef,
      name: string,
      beaconHash: string,
      numIterationsExp: number,
      logger?: Logger,
    ): Promise<unknown>;
    exportVerificationKey(zkey: FileRef, logger?: Logger): Promise<Record<string, unknown>>;
    /** `snarkjs zkey verify`: the zkey comes from this r1cs and ptau through a consistent contribution chain. */
    verifyFromR1cs(r1cs: FileRef, ptau: FileRef, zkey: FileRef, logger?: Logger): Promise<boolean>;
  };
  export const curves: {
    getCurveFromName(name: string): Promise<Curve>;
  };
}

declare module 'circomlibjs' {
  export interface PoseidonField {
    toObject(element: Uint8Array): bigint;
  }
  export interface Poseidon {
    (inputs: bigint[]): Uint8Array;
    F: PoseidonField;
  }
  export function buildPoseidon(): Promise<Poseidon>;
  /** A field element of circomlibjs (Montgomery form). */
  export type FieldElement = Uint8Array;
  export interface BabyJubField {
    e(value: bigint | string): FieldElement;
    toObject(element: FieldElement): bigint;
  }
  export interface Eddsa {
    F: BabyJubField;
    prv2pub(privateKey: Uint8Array): [FieldElement, FieldElement];
    signPoseidon(
      privateKey: Uint8Array,
      message: FieldElement,
    ): { R8: [FieldElement, FieldElement]; S: bigint };
    verifyPoseidon(
      message: FieldElement,
      signature: { R8: [FieldElement, FieldElement]; S: bigint },
      publicKey: [FieldElement, FieldElement],
    ): boolean;
  }
  export function buildEddsa(): Promise<Eddsa>;
  export interface SparseMerkleTree {
    F: BabyJubField;
    root: FieldElement;
    hash0: unknown;
    hash1: unknown;
    insert(key: bigint, value: bigint): Promise<unknown>;
    find(key: bigint): Promise<{
      found: boolean;
      siblings: FieldElement[];
      notFoundKey: FieldElement;
      notFoundValue: FieldElement;
      isOld0: boolean;
    }>;
  }
  export function newMemEmptyTrie(): Promise<SparseMerkleTree>;
  export class SMTMemDb {
    constructor(F: BabyJubField);
    getRoot(): Promise<FieldElement>;
  }
  export class SMT {
    constructor(db: SMTMemDb, root: FieldElement, hash0: unknown, hash1: unknown, F: BabyJubField);
  }
}

declare module 'circom_runtime' {
  export function WitnessCalculatorBuilder(
    code: Uint8Array,
    options?: Record<string, unknown>,
  ): Promise<unknown>;
}

declare module 'ffjavascript' {
  export const utils: { unstringifyBigInts(value: unknown): unknown };
}
