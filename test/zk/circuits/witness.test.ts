// Witness-level tests of the blind-policy circuits: fast, run every time. They use the committed
// wasm, so they test exactly what the prover runs.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../../shared/platform/errors';
import {
  FIELD_PRIME,
  MAX_VALUE,
  MAX_SET_SIZE,
  merkleRoot,
  poseidonHash,
} from '../../../shared/platform/field';
import { terminateCurves } from '../../../shared/zk';
import { commitSet, getPolicy, parsePolicyInputs, preparePolicyInput } from '../../../shared/zk/policies';
import type { CircuitInput, PolicyId } from '../../../shared/zk/policies';
import { stageContext } from '../../../shared/zk/context';
import { publicSignalsOf, rejects } from './helpers';

const P_MINUS_1 = FIELD_PRIME - 1n;

// circom's witness calculator prints each failed assert (template and line) before throwing.
beforeAll(() => {
  vi.spyOn(console, 'error').mockImplementation(() => {});
});
afterAll(async () => {
  await terminateCurves();
});
const TWO_64 = 1n << 64n;

/** Builds the circuit input without the policy check, as an attacker driving the circuit would. */
async function unchecked(policyId: PolicyId, raw: unknown): Promise<CircuitInput> {
  const policy = getPolicy(policyId);
  return (await policy.buildInput(parsePolicyInputs(policy, raw), 0n)).circuitInput;
}

/** Sets private values directly, recomputing their commitments so only the policy itself can fail. */
async function forged(base: CircuitInput, values: Record<string, bigint>): Promise<CircuitInput> {
  const input = { ...base };
  for (const [name, value] of Object.entries(values)) {
    input[name] = String(value);
    const commitment = await poseidonHash([value, BigInt(input[`${name}Salt`] as string)]);
    input[`${name}Commitment`] = String(commitment);
  }
  return input;
}

async function expectAppError(promise: Promise<unknown>, status: number, code: string) {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect(err).toMatchObject({ status, code });
}

describe('threshold circuit', () => {
  it('proves value >= threshold with commitments, policy id, context and result as public signals', async () => {
    const context = await stageContext('prf_01jd3zzzzzzzzzzzzzzzzzzzzz', 2);
    const prepared = await preparePolicyInput(
      'threshold',
      { value: '1000', threshold: 750 },
      { context: BigInt(context) },
    );
    const signals = await publicSignalsOf('threshold', prepared.circuitInput);
    expect(signals).toEqual([
      '1',
      prepared.commitments.valueCommitment,
      prepared.commitments.thresholdCommitment,
      String(getPolicy('threshold').fieldId),
      context,
    ]);
    // The inputs themselves are never public.
    expect(signals).not.toContain('1000');
    expect(signals).not.toContain('750');
    expect(signals[1]).toBe(String(await poseidonHash([1000n, BigInt(prepared.salts.valueSalt!)])));
  });

  it('accepts the edges: equal values, zero, the largest bounded value', async () => {
    for (const [value, threshold] of [
      [5n, 5n],
      [0n, 0n],
      [MAX_VALUE, MAX_VALUE],
      [MAX_VALUE, 0n],
    ]) {
      const prepared = await preparePolicyInput('threshold', {
        value: String(value),
        threshold: String(threshold),
      });
      expect(await rejects('threshold', prepared.circuitInput)).toBe(false);
    }
  });

  it('has no witness when the value is below the threshold', async () => {
    expect(await rejects('threshold', await unchecked('threshold', { value: 6, threshold: 7 }))).toBe(true);
    await expectAppError(
      preparePolicyInput('threshold', { value: 6, threshold: 7 }),
      422,
      'policy_not_satisfied',
    );
  });

  it('rejects field-overflow values that would wrap the comparison', async () => {
    const base = await unchecked('threshold', { value: 1, threshold: 1 });
    for (const values of [
      { value: P_MINUS_1, threshold: 5n },
      { value: TWO_64, threshold: 5n },
      { value: TWO_64 + 5n, threshold: TWO_64 },
      { value: 5n, threshold: P_MINUS_1 },
      { value: P_MINUS_1, threshold: P_MINUS_1 },
    ]) {
      expect(await rejects('threshold', await forged(base, values))).toBe(true);
    }
    await expectAppError(
      preparePolicyInput('threshold', { value: String(TWO_64), threshold: 1 }),
      400,
      'validation_failed',
    );
  });

  it('rejects a commitment or policy id that does not match', async () => {
    const input = await unchecked('threshold', { value: 9, threshold: 3 });
    expect(await rejects('threshold', { ...input, valueCommitment: input.thresholdCommitment! })).toBe(true);
    expect(await rejects('threshold', { ...input, policyId: String(getPolicy('range').fieldId) })).toBe(true);
  });
});

describe('range circuit', () => {
  it('proves low <= value <= high, including both ends and low == high', async () => {
    for (const [value, low, high] of [
      [50n, 10n, 100n],
      [10n, 10n, 100n],
      [100n, 10n, 100n],
      [7n, 7n, 7n],
      [0n, 0n, MAX_VALUE],
      [MAX_VALUE, 0n, MAX_VALUE],
    ]) {
      const prepared = await preparePolicyInput('range', {
        value: String(value),
        low: String(low),
        high: String(high),
      });
      const signals = await publicSignalsOf('range', prepared.circuitInput);
      expect(signals).toEqual([
        '1',
        prepared.commitments.valueCommitment,
        prepared.commitments.lowCommitment,
        prepared.commitments.highCommitment,
        String(getPolicy('range').fieldId),
        '0',
      ]);
    }
  });

  it('has no witness outside the range or for an empty range', async () => {
    for (const raw of [
      { value: 9, low: 10, high: 100 },
      { value: 101, low: 10, high: 100 },
      { value: 50, low: 60, high: 40 },
    ]) {
      expect(await rejects('range', await unchecked('range', raw))).toBe(true);
      await expectAppError(preparePolicyInput('range', raw), 422, 'policy_not_satisfied');
    }
  });

  it('rejects field-overflow values', async () => {
    const base = await unchecked('range', { value: 1, low: 1, high: 1 });
    for (const values of [
      { value: P_MINUS_1, low: 0n, high: 10n },
      { value: 5n, low: 0n, high: P_MINUS_1 },
      { value: 5n, low: P_MINUS_1, high: 10n },
      { value: TWO_64, low: 0n, high: TWO_64 },
    ]) {
      expect(await rejects('range', await forged(base, values))).toBe(true);
    }
  });
});

describe('membership circuit', () => {
  const set = [11n, 22n, 33n, 44n, 55n];

  it('proves membership for the first, middle and last member', async () => {
    const setSalt = '12345';
    const expected = String(await commitSet(set, 12345n));
    for (const value of [11n, 33n, 55n]) {
      const prepared = await preparePolicyInput('membership', {
        value: String(value),
        set: set.map(String),
        setSalt,
      });
      expect(prepared.commitments.setCommitment).toBe(expected);
      const signals = await publicSignalsOf('membership', prepared.circuitInput);
      expect(signals).toEqual([
        '1',
        prepared.commitments.valueCommitment,
        expected,
        String(getPolicy('membership').fieldId),
        '0',
      ]);
    }
  });

  it('handles a full set of 2^10 members, its last slot included', async () => {
    const full = Array.from({ length: MAX_SET_SIZE }, (_, i) => String(1000 + i));
    const prepared = await preparePolicyInput('membership', { value: full.at(-1), set: full });
    expect(await rejects('membership', prepared.circuitInput)).toBe(false);
    await expectAppError(
      preparePolicyInput('membership', { value: 1, set: [...full, '1'] }),
      400,
      'validation_failed',
    );
  });

  it('has no witness for a value outside the set', async () => {
    const input = await unchecked('membership', { value: 22, set: set.map(String) });
    // The path of a real member, with another value put in its place.
    expect(await rejects('membership', await forged(input, { value: 23n }))).toBe(true);
    await expectAppError(
      preparePolicyInput('membership', { value: 23, set: set.map(String) }),
      422,
      'policy_not_satisfied',
    );
  });

  it('does not count an empty slot (0) as a member', async () => {
    const input = await unchecked('membership', { value: 55, set: set.map(String) });
    // The true path of slot 5 (empty): slot 4's path with slot 4's leaf as the first sibling.
    const pathElements = [...(input.pathElements as string[])];
    pathElements[0] = String(await poseidonHash([55n]));
    const zeroLeaf = await forged({ ...input, pathElements, pathIndex: '5' }, { value: 0n });
    expect(await rejects('membership', zeroLeaf)).toBe(true);
    expect(await merkleRoot(set)).not.toBe(await merkleRoot([...set, 0n]));
  });

  it('rejects an out-of-bound value even when it is in the tree', async () => {
    const input = await unchecked('membership', { value: 1, set: ['1'] });
    const root = await merkleRoot([P_MINUS_1]);
    const overflow = await forged(
      { ...input, setCommitment: String(await poseidonHash([root, BigInt(input.setSalt as string)])) },
      { value: P_MINUS_1 },
    );
    expect(await rejects('membership', overflow)).toBe(true);
  });

  it('rejects a path index beyond the tree', async () => {
    const input = await unchecked('membership', { value: 11, set: set.map(String) });
    expect(await rejects('membership', { ...input, pathIndex: String(MAX_SET_SIZE) })).toBe(true);
  });
});

describe('policy inputs', () => {
  it('generates random salts when absent and keeps given ones', async () => {
    const a = await preparePolicyInput('threshold', { value: 3, threshold: 2 });
    const b = await preparePolicyInput('threshold', { value: 3, threshold: 2 });
    expect(a.salts.valueSalt).not.toBe(b.salts.valueSalt);
    expect(a.commitments.valueCommitment).not.toBe(b.commitments.valueCommitment);
    const c = await preparePolicyInput('threshold', {
      value: 3,
      threshold: 2,
      valueSalt: '7',
      thresholdSalt: '8',
    });
    expect(c.salts).toEqual({ valueSalt: '7', thresholdSalt: '8' });
    expect(c.commitments.valueCommitment).toBe(String(await poseidonHash([3n, 7n])));
  });

  it('refuses malformed inputs without echoing them', async () => {
    for (const raw of [
      { value: -1, threshold: 0 },
      { value: 1.5, threshold: 0 },
      { value: '0x10', threshold: 0 },
      { value: '18446744073709551616', threshold: 0 },
      { value: 1, threshold: 0, valueSalt: String(FIELD_PRIME) },
      { value: 1, threshold: 0, extra: 1 },
      { value: 1 },
    ]) {
      const err = await preparePolicyInput('threshold', raw).catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 400, code: 'validation_failed' });
      expect(JSON.stringify((err as AppError).errors)).not.toContain('18446744073709551616');
    }
    await expectAppError(preparePolicyInput('nope', {}), 400, 'unknown_policy');
  });
});
