// The anonymous ballot circuit in layers: fast witness-level tests against the committed wasm (the
// public signals are the tree root, the nullifier, the scope and the vote hash the client computes), the
// vote encryption, and — marked, slower — full Groth16 proofs made by the voter's client and verified
// against the committed key, with every public signal bound.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as snarkjs from 'snarkjs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ballotCircuitInput,
  loadBallotArtifacts,
  makeBallot,
} from '../../../shared/governance/ballot-client';
import {
  BALLOT_CIPHERTEXT_BYTES,
  MAX_ROOM_IDENTITIES,
  ballotPublicKey,
  ballotSignals,
  createIdentity,
  decryptVote,
  encryptVote,
  memberTreeRoot,
  nullifierOf,
  proposalScope,
  verifyBallotProof,
  voteHashOf,
} from '../../../shared/governance/ballot-protocol';
import { terminateCurves } from '../../../shared/zk';
import { artifactPaths } from '../../../shared/zk/artifacts';

const wasm = new Uint8Array(readFileSync(artifactPaths('ballot').wasm));
const vkey = JSON.parse(readFileSync(artifactPaths('ballot').vkey, 'utf8')) as unknown;
afterAll(() => terminateCurves());

/** The circuit's public signals for an input, from the committed wasm (wtns section 2, values 1..4). */
async function publicSignals(input: Record<string, unknown>): Promise<string[]> {
  const out: snarkjs.MemFile = { type: 'mem' };
  await snarkjs.wtns.calculate(input, { type: 'mem', data: wasm }, out);
  const buf = Buffer.from(out.data!);
  let pos = 12;
  for (let i = 0; i < buf.readUInt32LE(8); i++) {
    const type = buf.readUInt32LE(pos);
    const size = Number(buf.readBigUInt64LE(pos + 4));
    if (type === 2) {
      return [1, 2, 3, 4].map((j) => {
        const start = pos + 12 + j * 32;
        return BigInt(
          `0x${Buffer.from(buf.subarray(start, start + 32))
            .reverse()
            .toString('hex')}`,
        ).toString();
      });
    }
    pos += 12 + size;
  }
  throw new Error('no witness values');
}

describe('ballot circuit (witness level)', () => {
  it('outputs the room tree root and the proposal nullifier, and takes the scope and vote hash as given', async () => {
    const ids = await Promise.all(Array.from({ length: 5 }, () => createIdentity()));
    const members = ids.map((i) => i.commitment);
    const root = String(await memberTreeRoot(members.map(BigInt)));
    for (const index of [0, 3, 4]) {
      const { input, nullifier } = await ballotCircuitInput(ids[index]!, members, 'prop_a', 99n);
      expect(await publicSignals(input)).toEqual([root, nullifier, String(proposalScope('prop_a')), '99']);
      expect(nullifier).toBe(String(await nullifierOf(ids[index]!.secret, proposalScope('prop_a'))));
    }
  });

  it('gives one nullifier per member and proposal, whatever the vote, and another for another proposal', async () => {
    const [me, other] = [await createIdentity(), await createIdentity()];
    const members = [other.commitment, me.commitment];
    const a = await ballotCircuitInput(me, members, 'prop_a', 1n);
    const b = await ballotCircuitInput(me, members, 'prop_a', 2n);
    const c = await ballotCircuitInput(me, members, 'prop_b', 1n);
    const d = await ballotCircuitInput(other, members, 'prop_a', 1n);
    expect(a.nullifier).toBe(b.nullifier);
    expect(new Set([a.nullifier, c.nullifier, d.nullifier]).size).toBe(3);
    expect(new Set([a.root, b.root, c.root, d.root]).size).toBe(1);
  });

  it('proves nothing for a secret outside the tree: its path leads to another root', async () => {
    const ids = await Promise.all(Array.from({ length: 3 }, () => createIdentity()));
    const outsider = await createIdentity();
    const members = ids.map((i) => i.commitment);
    const { input } = await ballotCircuitInput(ids[1]!, members, 'prop_a', 5n);
    const signals = await publicSignals({ ...input, identitySecret: outsider.secret });
    expect(signals[0]).not.toBe(String(await memberTreeRoot(members.map(BigInt))));
    await expect(ballotCircuitInput(outsider, members, 'prop_a', 5n)).rejects.toThrow(/not in the room/);
  });

  it('holds a full tree of 1024 identities, the last leaf included', async () => {
    const last = await createIdentity();
    const members = [
      ...Array.from({ length: MAX_ROOM_IDENTITIES - 1 }, (_, i) => String(BigInt(i + 1) * 7919n)),
      last.commitment,
    ];
    const { input, root } = await ballotCircuitInput(last, members, 'prop_full', 3n);
    expect((await publicSignals(input))[0]).toBe(root);
    await expect(memberTreeRoot([...members, '1'].map(BigInt))).rejects.toThrow(/at most 1024/);
  });
});

describe('vote encryption', () => {
  const proposalKey = () => {
    const raw = generateKeyPairSync('x25519')
      .privateKey.export({ format: 'der', type: 'pkcs8' })
      .subarray(16);
    return { privateKey: raw, publicKey: ballotPublicKey(raw) };
  };

  it('opens with the proposal key only, to the choice, at one length whatever the choice', () => {
    const key = proposalKey();
    const short = encryptVote(key.publicKey, 'prop_a', 'y');
    const long = encryptVote(key.publicKey, 'prop_a', 'é'.repeat(200));
    expect([short.length, long.length]).toEqual([BALLOT_CIPHERTEXT_BYTES, BALLOT_CIPHERTEXT_BYTES]);
    expect(decryptVote(key.privateKey, 'prop_a', short)).toBe('y');
    expect(decryptVote(key.privateKey, 'prop_a', long)).toBe('é'.repeat(200));
    expect(decryptVote(proposalKey().privateKey, 'prop_a', short)).toBeNull();
    expect(decryptVote(key.privateKey, 'prop_b', short)).toBeNull();
    const altered = Buffer.from(short);
    altered[50] = altered[50]! ^ 1;
    expect(decryptVote(key.privateKey, 'prop_a', altered)).toBeNull();
    // Two encryptions of one choice share nothing.
    expect(encryptVote(key.publicKey, 'prop_a', 'y').equals(short)).toBe(false);
  });
});

describe('ballot proofs (full prove and verify: slower)', () => {
  it('verifies a client-made proof, and fails it for any other root, nullifier, scope or vote', async () => {
    const artifacts = await loadBallotArtifacts('circuits/artifacts');
    const ids = await Promise.all(Array.from({ length: 3 }, () => createIdentity()));
    const key = generateKeyPairSync('x25519')
      .privateKey.export({ format: 'der', type: 'pkcs8' })
      .subarray(16);
    const info = {
      proposalId: 'prop_p',
      roomId: 'room_r',
      publicKey: ballotPublicKey(key).toString('base64url'),
      members: ids.map((i) => i.commitment),
    };
    const ballot = await makeBallot({ identity: ids[2]!, info, choice: 'yes', artifacts });
    const ciphertext = Buffer.from(ballot.ciphertext, 'base64url');
    const signals = {
      root: ballot.root,
      nullifier: ballot.nullifier,
      scope: proposalScope('prop_p'),
      voteHash: voteHashOf(ciphertext),
    };
    expect(await verifyBallotProof(vkey, ballot.proof, ballotSignals(signals))).toBe(true);
    expect(decryptVote(key, 'prop_p', ciphertext)).toBe('yes');
    const bumped = (v: string) => String(BigInt(v) + 1n);
    for (const changed of [
      { ...signals, root: bumped(signals.root) },
      { ...signals, nullifier: bumped(signals.nullifier) },
      { ...signals, scope: proposalScope('prop_other') },
      { ...signals, voteHash: signals.voteHash + 1n },
    ])
      expect(await verifyBallotProof(vkey, ballot.proof, ballotSignals(changed))).toBe(false);
  }, 120_000);

  it('makes ballots of several voters at once, each with its own signals', async () => {
    const artifacts = await loadBallotArtifacts('circuits/artifacts');
    const ids = await Promise.all(Array.from({ length: 3 }, () => createIdentity()));
    const key = generateKeyPairSync('x25519')
      .privateKey.export({ format: 'der', type: 'pkcs8' })
      .subarray(16);
    const info = {
      proposalId: 'prop_q',
      roomId: 'room_r',
      publicKey: ballotPublicKey(key).toString('base64url'),
      members: ids.map((i) => i.commitment),
    };
    // One compiled witness calculator serves every ballot: made at once, they must not mix signals.
    const ballots = await Promise.all(
      ids.map((identity, i) =>
        makeBallot({ identity, info, choice: ['yes', 'no', 'abstain'][i]!, artifacts }),
      ),
    );
    expect(new Set(ballots.map((b) => b.nullifier)).size).toBe(3);
    for (const [i, b] of ballots.entries()) {
      const ciphertext = Buffer.from(b.ciphertext, 'base64url');
      const signals = {
        root: b.root,
        nullifier: b.nullifier,
        scope: proposalScope('prop_q'),
        voteHash: voteHashOf(ciphertext),
      };
      expect(await verifyBallotProof(vkey, b.proof, ballotSignals(signals))).toBe(true);
      expect(b.nullifier).toBe(String(await nullifierOf(ids[i]!.secret, proposalScope('prop_q'))));
    }
  }, 120_000);
});
