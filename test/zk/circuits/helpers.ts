// Witness-level helpers for the circuit tests: run the committed wasm and read the public signals.
import { readFileSync } from 'node:fs';
import * as snarkjs from 'snarkjs';
import { artifactPaths } from '../../../shared/zk/artifacts';
import { getPolicy } from '../../../shared/zk/policies';
import type { CircuitInput, PolicyId } from '../../../shared/zk/policies';

const wasmCache = new Map<string, Uint8Array>();

function wasmOf(policyId: PolicyId): Uint8Array {
  const circuit = getPolicy(policyId).circuit;
  let wasm = wasmCache.get(circuit);
  if (!wasm) {
    wasm = new Uint8Array(readFileSync(artifactPaths(circuit).wasm));
    wasmCache.set(circuit, wasm);
  }
  return wasm;
}

/** Runs the circuit's witness calculator; throws when an assert or constraint of the circuit fails. */
export async function witness(policyId: PolicyId, input: CircuitInput): Promise<bigint[]> {
  const out: snarkjs.MemFile = { type: 'mem' };
  await snarkjs.wtns.calculate(input, { type: 'mem', data: wasmOf(policyId) }, out);
  const buf = Buffer.from(out.data!.buffer, out.data!.byteOffset, out.data!.byteLength);
  // wtns layout: magic, version, section count, then sections (type u32, size u64, data).
  let pos = 12;
  let n8 = 32;
  let count = 0;
  for (let i = 0; i < buf.readUInt32LE(8); i++) {
    const type = buf.readUInt32LE(pos);
    const size = Number(buf.readBigUInt64LE(pos + 4));
    if (type === 1) {
      n8 = buf.readUInt32LE(pos + 12);
      count = buf.readUInt32LE(pos + 16 + n8);
    }
    if (type === 2) {
      const values: bigint[] = [];
      for (let j = 0; j < count; j++) {
        const start = pos + 12 + j * n8;
        values.push(
          BigInt(
            `0x${Buffer.from(buf.subarray(start, start + n8))
              .reverse()
              .toString('hex')}`,
          ),
        );
      }
      return values;
    }
    pos += 12 + size;
  }
  throw new Error('witness without values');
}

/** The public signals (witness 1..nPublic) as decimal strings, in circuit order. */
export async function publicSignalsOf(policyId: PolicyId, input: CircuitInput): Promise<string[]> {
  const values = await witness(policyId, input);
  return values.slice(1, getPolicy(policyId).publicSignals.length + 1).map(String);
}

/**
 * True when the circuit's constraints reject the input (its witness calculator checks each one
 * as it goes); false when a witness came out. Any other failure is rethrown.
 */
export async function rejects(policyId: PolicyId, input: CircuitInput): Promise<boolean> {
  try {
    await witness(policyId, input);
    return false;
  } catch (err) {
    if (err instanceof Error && /Assert Failed/.test(err.message)) return true;
    throw err;
  }
}
