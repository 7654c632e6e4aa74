// Full prove -> verify tests: slower (a Groth16 proof each), so fewer; one per policy plus the
// ways a proof must fail verification. The fast layer is witness.test.ts.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as snarkjs from 'snarkjs';
import { logger } from '../../../shared/platform/log';
import {
  nativeBackend,
  preparePolicyInput,
  provePolicy,
  rapidsnarkBackend,
  selectProverBackend,
  snarkjsBackend,
  terminateCurves,
  verifyPolicyProof,
} from '../../../shared/zk';
import type { PolicyId, PolicyProof } from '../../../shared/zk';

const backend = snarkjsBackend();
const proofs = {} as Record<PolicyId, PolicyProof>;
let scratch: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'px-prove-test-'));
  proofs.threshold = await provePolicy(backend, 'threshold', { value: '720', threshold: '650' });
  proofs.range = await provePolicy(backend, 'range', { value: 42, low: 18, high: 65 });
  proofs.membership = await provePolicy(backend, 'membership', {
    value: '840',
    set: ['124', '250', '840', '276'],
  });
}, 60_000);

afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await terminateCurves();
});

const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

describe('prove -> verify (full Groth16)', () => {
  it.each(['threshold', 'range', 'membership'] as const)('%s: a proof verifies', async (policyId) => {
    const p = proofs[policyId];
    expect(await verifyPolicyProof(policyId, p.proof, p.publicSignals)).toEqual({ valid: true });
    expect(p.backend).toBe('snarkjs');
    expect(p.publicSignals[0]).toBe('1');
    for (const commitment of Object.values(p.commitments)) expect(p.publicSignals).toContain(commitment);
    expect(p.timings.witnessMs).toBeGreaterThan(0);
    expect(p.timings.provingMs).toBeGreaterThan(0);
  });

  it('keeps the private inputs out of the public result', () => {
    const p = proofs.threshold;
    const published = JSON.stringify({
      proof: p.proof,
      publicSignals: p.publicSignals,
      commitments: p.commitments,
    });
    expect(published).not.toMatch(/"720"|"650"/);
  });

  it('rejects a tampered proof', async () => {
    const p = proofs.threshold;
    const tampered = copy(p.proof);
    tampered.pi_c = copy(p.proof.pi_a);
    expect(await verifyPolicyProof('threshold', tampered, p.publicSignals)).toEqual({
      valid: false,
      reason: 'proof_invalid',
    });
    const offCurve = copy(p.proof);
    offCurve.pi_a[0] = '1';
    expect((await verifyPolicyProof('threshold', offCurve, p.publicSignals)).valid).toBe(false);
  });

  it('rejects swapped or altered public signals', async () => {
    const p = proofs.range;
    const swapped = [...p.publicSignals];
    [swapped[1], swapped[2]] = [swapped[2]!, swapped[1]!];
    expect(await verifyPolicyProof('range', p.proof, swapped)).toEqual({
      valid: false,
      reason: 'proof_invalid',
    });
    const other = [...p.publicSignals];
    other[3] = String(BigInt(other[3]!) + 1n);
    expect(await verifyPolicyProof('range', p.proof, other)).toEqual({
      valid: false,
      reason: 'proof_invalid',
    });
    const unsatisfied = [...p.publicSignals];
    unsatisfied[0] = '0';
    expect(await verifyPolicyProof('range', p.proof, unsatisfied)).toEqual({
      valid: false,
      reason: 'result_not_satisfied',
    });
  });

  it('rejects a proof presented for another policy', async () => {
    const t = proofs.threshold;
    expect(await verifyPolicyProof('membership', t.proof, t.publicSignals)).toEqual({
      valid: false,
      reason: 'policy_mismatch',
    });
    expect(await verifyPolicyProof('threshold', proofs.range.proof, proofs.range.publicSignals)).toEqual({
      valid: false,
      reason: 'signal_count_mismatch',
    });
    // Even with the id signal rewritten, the other circuit's key does not accept it.
    const relabelled = [...t.publicSignals];
    relabelled[3] = proofs.membership.publicSignals[3]!;
    expect(await verifyPolicyProof('membership', t.proof, relabelled)).toEqual({
      valid: false,
      reason: 'proof_invalid',
    });
  });

  it('answers malformed input with invalid_proof_format, never an unhandled error', async () => {
    const p = proofs.threshold;
    for (const [proof, signals] of [
      [null, p.publicSignals],
      [{ ...p.proof, pi_a: ['x', '1', '1'] }, p.publicSignals],
      [{ ...p.proof, pi_b: [['1']] }, p.publicSignals],
      [p.proof, 'nope'],
      [p.proof, [1, 2, 3, 4]],
      [p.proof, ['1e5', '1', '1', '1']],
    ] as const) {
      await expect(verifyPolicyProof('threshold', proof, signals)).rejects.toMatchObject({
        status: 400,
        code: 'invalid_proof_format',
      });
    }
    const outside = [...p.publicSignals];
    outside[1] = '9'.repeat(78);
    expect(await verifyPolicyProof('threshold', p.proof, outside)).toEqual({
      valid: false,
      reason: 'signal_out_of_field',
    });
    await expect(verifyPolicyProof('nope', p.proof, p.publicSignals)).rejects.toMatchObject({
      code: 'unknown_policy',
    });
  });

  it('checks the policy before proving', async () => {
    await expect(provePolicy(backend, 'range', { value: 70, low: 18, high: 65 })).rejects.toMatchObject({
      status: 422,
      code: 'policy_not_satisfied',
    });
  });
});

describe('rapidsnark backend', () => {
  // snarkjs's CLI speaks the same `prove <zkey> <wtns> <proof> <public>` contract as rapidsnark.
  const script = (name: string, body: string) => {
    const path = join(scratch, name);
    writeFileSync(path, `#!/bin/sh\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  };
  const snarkjsCli = join(process.cwd(), 'node_modules', 'snarkjs', 'build', 'cli.cjs');

  it('proves through the external CLI and verifies its output', async () => {
    const bin = script('prover', `exec "${process.execPath}" "${snarkjsCli}" groth16 prove "$@" >/dev/null`);
    const p = await provePolicy(rapidsnarkBackend({ bin }), 'threshold', { value: 5, threshold: 5 });
    expect(p.backend).toBe('rapidsnark');
    expect(await verifyPolicyProof('threshold', p.proof, p.publicSignals)).toEqual({ valid: true });
  });

  it('refuses a binary whose proof does not verify, or that fails', async () => {
    const stale = proofs.threshold;
    const liar = script(
      'liar',
      `echo '${JSON.stringify(stale.proof)}' > "$3"; echo '${JSON.stringify(stale.publicSignals)}' > "$4"`,
    );
    await expect(
      provePolicy(rapidsnarkBackend({ bin: liar }), 'threshold', { value: 9, threshold: 1 }),
    ).rejects.toThrow(/do not match the input/);
    const forged = copy(stale.proof);
    forged.pi_a = copy(stale.proof.pi_c);
    const forger = script(
      'forger',
      `echo '${JSON.stringify(forged)}' > "$3"; echo '${JSON.stringify(stale.publicSignals)}' > "$4"`,
    );
    const salts = { valueSalt: stale.salts.valueSalt, thresholdSalt: stale.salts.thresholdSalt };
    await expect(
      provePolicy(rapidsnarkBackend({ bin: forger }), 'threshold', { value: 720, threshold: 650, ...salts }),
    ).rejects.toThrow(/does not verify/);
    const broken = script('broken', 'exit 3');
    await expect(
      provePolicy(rapidsnarkBackend({ bin: broken }), 'threshold', { value: 9, threshold: 1 }),
    ).rejects.toThrow(/rapidsnark failed \(exit 3\)/);
  });

  it('is chosen by auto only when the binary is executable', () => {
    script('broken', 'exit 3');
    expect(selectProverBackend({ kind: 'auto', rapidsnarkBin: undefined }).name).toBe('snarkjs');
    expect(selectProverBackend({ kind: 'auto', rapidsnarkBin: join(scratch, 'missing') }).name).toBe(
      'snarkjs',
    );
    expect(selectProverBackend({ kind: 'auto', rapidsnarkBin: join(scratch, 'broken') }).name).toBe(
      'rapidsnark',
    );
    expect(() => selectProverBackend({ kind: 'rapidsnark', rapidsnarkBin: undefined })).toThrow(
      /RAPIDSNARK_BIN/,
    );
    expect(() => selectProverBackend({ kind: 'native' })).toThrow(/native/);
  });
});

describe('native backend adapter', () => {
  it('proves with any prover of the native shape and checks what it returns', async () => {
    // snarkjs behind the native interface: the adapter's witness, caching and checks are under test.
    let loads = 0;
    const honest = {
      async load(zkey: Uint8Array) {
        loads++;
        return {
          prove: (witness: Uint8Array) =>
            snarkjs.groth16.prove({ type: 'mem', data: zkey }, { type: 'mem', data: witness }),
        };
      },
    };
    const native = nativeBackend(honest);
    const first = await provePolicy(native, 'range', { value: 3, low: 1, high: 4 });
    await provePolicy(native, 'range', { value: 4, low: 1, high: 4 });
    expect(first.backend).toBe('native');
    expect(loads).toBe(1);
    expect(await verifyPolicyProof('range', first.proof, first.publicSignals)).toEqual({ valid: true });

    const stale = proofs.range;
    const wrong = nativeBackend({ load: async () => ({ prove: async () => copy(stale) }) });
    await expect(provePolicy(wrong, 'range', { value: 3, low: 1, high: 4 })).rejects.toThrow(/do not match/);
  });

  it('falls back to snarkjs, and logs it, when a native proof fails its check', async () => {
    // A native prover whose proofs carry the right signals but do not verify (pi_a of another proof).
    const other = proofs.threshold;
    const broken = {
      async load(zkey: Uint8Array) {
        return {
          prove: async (witness: Uint8Array) => {
            const out = await snarkjs.groth16.prove(
              { type: 'mem', data: zkey },
              { type: 'mem', data: witness },
            );
            return { ...out, proof: { ...out.proof, pi_a: other.proof.pi_a } };
          },
        };
      },
    };
    const warn = vi.spyOn(logger, 'warn');
    try {
      const checked = nativeBackend(broken, { check: true, fallback: snarkjsBackend() });
      const out = await checked.prove(
        'range',
        (await preparePolicyInput('range', { value: 3, low: 1, high: 4 })).circuitInput,
      );
      expect(out.provedBy).toBe('snarkjs');
      expect(await verifyPolicyProof('range', out.proof, out.publicSignals)).toEqual({ valid: true });
      expect(warn).toHaveBeenCalledWith(
        expect.objectContaining({ policyId: 'range', err: expect.stringMatching(/does not verify/) }),
        expect.stringMatching(/fallback/),
      );
      // With the check switched off the native proof is returned as it is (trusted).
      const trusted = nativeBackend(broken, { check: false, fallback: snarkjsBackend() });
      const raw = await trusted.prove(
        'range',
        (await preparePolicyInput('range', { value: 3, low: 1, high: 4 })).circuitInput,
      );
      expect(raw.provedBy).toBeUndefined();
      expect((await verifyPolicyProof('range', raw.proof, raw.publicSignals)).valid).toBe(false);
    } finally {
      warn.mockRestore();
    }
  });
});
