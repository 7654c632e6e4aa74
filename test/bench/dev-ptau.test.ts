// The benchmarks' development powers of tau (bench/host/dev-ptau.cpp) is what snarkjs would make of the
// same secrets: its prepared sections equal snarkjs's preparePhase2 of its own raw sections, and the
// secrets agree across groups.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as snarkjs from 'snarkjs';
import { afterAll, describe, expect, it } from 'vitest';
import { runDevPtau } from '../../bench/large-circuit';

const dir = mkdtempSync(join(tmpdir(), 'dev-ptau-test-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate();
});

/** Each section of a snarkjs binary file, header included, by type. */
function sections(file: Buffer): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let pos = 12;
  for (let i = 0; i < file.readUInt32LE(8); i++) {
    const size = Number(file.readBigUInt64LE(pos + 4));
    out.set(file.readUInt32LE(pos), file.subarray(pos, pos + 12 + size));
    pos += 12 + size;
  }
  return out;
}

describe('development powers of tau', () => {
  it('matches snarkjs preparePhase2 byte for byte, and tau and beta agree between G1 and G2', async () => {
    const power = 5;
    const file = join(dir, 'dev.ptau');
    const again = join(dir, 'again.ptau');
    await runDevPtau(power, file, again);
    const mine = sections(readFileSync(file));
    expect([...mine.keys()]).toEqual([1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15]);

    // The unprepared ceremony (sections 1-7) as snarkjs's own tools leave it, then snarkjs prepares it.
    const head = Buffer.alloc(12);
    head.write('ptau', 0, 'ascii');
    head.writeUInt32LE(1, 4);
    head.writeUInt32LE(7, 8);
    const raw = join(dir, 'raw.ptau');
    writeFileSync(raw, Buffer.concat([head, ...[1, 2, 3, 4, 5, 6, 7].map((t) => mine.get(t)!)]));
    const prepared = join(dir, 'prepared.ptau');
    await snarkjs.powersOfTau.preparePhase2(raw, prepared);
    const theirs = sections(readFileSync(prepared));
    for (const type of [1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15]) {
      expect(mine.get(type)!.equals(theirs.get(type)!), `section ${type}`).toBe(true);
    }
    // Section 12 holds every power up to power + 1: 2^(power + 2) - 1 points of 64 bytes.
    expect(mine.get(12)!.length).toBe(12 + (2 ** (power + 2) - 1) * 64);

    const curve = await snarkjs.curves.getCurveFromName('bn128');
    const g1 = (type: number, i: number) => curve.G1.fromRprLEM(mine.get(type)!, 12 + i * 64);
    const g2 = (type: number, i: number) => curve.G2.fromRprLEM(mine.get(type)!, 12 + i * 128);
    expect(curve.G1.eq(g1(2, 0), curve.G1.g)).toBe(true);
    expect(curve.G2.eq(g2(3, 0), curve.G2.g)).toBe(true);
    // e(tau·G1, G2) = e(G1, tau·G2); e(beta·G1, G2) = e(G1, beta·G2); e(tau²·G1, G2) = e(tau·G1, tau·G2).
    expect(await curve.pairingEq(g1(2, 1), curve.G2.g, curve.G1.neg(curve.G1.g), g2(3, 1))).toBe(true);
    expect(await curve.pairingEq(g1(5, 0), curve.G2.g, curve.G1.neg(curve.G1.g), g2(6, 0))).toBe(true);
    expect(await curve.pairingEq(g1(2, 2), curve.G2.g, curve.G1.neg(g1(2, 1)), g2(3, 1))).toBe(true);
    // and the secrets are drawn afresh: a second ceremony shares no tau with the first.
    expect(
      sections(readFileSync(again))
        .get(2)!
        .subarray(12 + 64, 12 + 128)
        .equals(mine.get(2)!.subarray(12 + 64, 12 + 128)),
    ).toBe(false);
  }, 120_000);
});
