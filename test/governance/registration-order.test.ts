// A dump taken after wallet members registered their own identities cannot pair a wallet's claim with
// its identity. The tree lists identities in registration order (public by design), so the claims must
// keep no order at all: the attacker here reads the claims table as a dump lists it (physical order,
// then each row's values in order) and pairs the n-th claim with the n-th registered leaf; it also looks
// for times, ids, sequences and transaction ids that would order the claims.
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memberCommitment } from '../../shared/governance/commitments';
import { identityMessage } from '../../shared/governance/commitments';
import { roomOrThrow } from '../../shared/governance/rooms';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, wallet } from './helpers';
import type { Wallet } from './helpers';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app.close());

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
/** A non-zero BN254 field element, decimal: an identity commitment as the tree takes it. */
const fieldElement = () => String(BigInt(`0x${randomBytes(30).toString('hex')}`) + 1n);

interface Member {
  wallet: Wallet;
  claim: string;
  identity: string;
}

/** A room of n wallet members; each member's claim (member commitment) as the service computes it. */
async function room(n: number): Promise<{ roomId: string; members: Member[] }> {
  const wallets = Array.from({ length: n }, () => wallet());
  const roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Registrations', members: wallets.map((w) => w.address) })
      .expect(201)
  ).body.roomId as string;
  // The test knows what only the operator could: each wallet's commitment under the room salt.
  const { salt } = await roomOrThrow(app.deps.db, roomId);
  return {
    roomId,
    members: wallets.map((w) => ({
      wallet: w,
      claim: memberCommitment(salt, w.address),
      identity: fieldElement(),
    })),
  };
}

async function register(roomId: string, m: Member) {
  await app.request
    .post(`/api/governance/rooms/${roomId}/identities/register`)
    .send({
      walletPublicKey: m.wallet.address,
      identityCommitment: m.identity,
      signature: m.wallet.sign(identityMessage(roomId, m.identity)),
    })
    .expect(201);
}

/** The claims of a room as a dump lists them: rows in physical order, each row's claims in order. */
async function dumpedClaims(roomId: string): Promise<string[]> {
  const rows = (
    await app.deps.db.raw('select * from room_identity_claims where room_id = ? order by ctid', [roomId])
  ).rows as Array<{ member_commitment?: string; member_commitments?: string[] }>;
  return rows.flatMap((r) => r.member_commitments ?? [r.member_commitment!]);
}

const leaves = async (roomId: string) =>
  (
    await app.deps.db.raw(
      'select identity_commitment, xmin::text from room_identities where room_id = ? order by leaf_index',
      [roomId],
    )
  ).rows as Array<{ identity_commitment: string; xmin: string }>;

describe('identity registrations', () => {
  it('leave claims whose order pairs none of them with its identity', async () => {
    const { roomId, members } = await room(12);
    // The order that pairs worst for the service: arrival is the reverse of the claims' byte order.
    const arrival = [...members].sort((a, b) => byCodeUnits(b.claim, a.claim));
    for (const m of arrival) await register(roomId, m);

    const claims = await dumpedClaims(roomId);
    const tree = await leaves(roomId);
    expect(tree.map((l) => l.identity_commitment)).toEqual(arrival.map((m) => m.identity));
    const identityOf = new Map(members.map((m) => [m.claim, m.identity]));
    const paired = claims.filter((c, i) => identityOf.get(c) === tree[i]!.identity_commitment).length;
    // Rows appended one per registration paired all 12.
    expect(paired).toBe(0);
    // The claims say which wallets registered, in an order that is the set's own, not the arrival's.
    expect(claims).toEqual(members.map((m) => m.claim).sort(byCodeUnits));

    // Nothing to sort the claims by: no time, no serial, no sequence, one row per room.
    const columns = (await app.deps
      .db('information_schema.columns')
      .where('table_schema', 'public')
      .whereIn('table_name', ['room_identity_claims', 'room_identities'])
      .select('table_name', 'column_name', 'data_type', 'column_default')) as Array<{
      table_name: string;
      column_name: string;
      data_type: string;
      column_default: string | null;
    }>;
    expect(columns.filter((c) => /time|date|interval/.test(c.data_type) || c.column_default)).toEqual([]);
    expect(
      columns
        .filter((c) => c.table_name === 'room_identity_claims')
        .map((c) => c.column_name)
        .sort(),
    ).toEqual(['member_commitments', 'room_id']);
    // Postgres stamps each row with the transaction that wrote it: the claims carry the last
    // registration's only, which says that the newest leaf is some claimed wallet's, not whose.
    const [claimRow] = (
      await app.deps.db.raw('select xmin::text from room_identity_claims where room_id = ?', [roomId])
    ).rows as Array<{ xmin: string }>;
    expect(tree.filter((l) => l.xmin === claimRow!.xmin)).toEqual([tree[tree.length - 1]]);
  });

  it('list the same claims whatever order they arrived in', async () => {
    const { roomId, members } = await room(8);
    const arrival = [...members];
    for (let i = arrival.length - 1; i > 0; i--) {
      const j = randomInt(i + 1);
      [arrival[i], arrival[j]] = [arrival[j]!, arrival[i]!];
    }
    for (const [i, m] of arrival.entries()) {
      await register(roomId, m);
      expect(await dumpedClaims(roomId)).toEqual(
        arrival
          .slice(0, i + 1)
          .map((x) => x.claim)
          .sort(byCodeUnits),
      );
    }
    // A second registration of a wallet changes nothing.
    const again = fieldElement();
    const second = await app.request.post(`/api/governance/rooms/${roomId}/identities/register`).send({
      walletPublicKey: arrival[0]!.wallet.address,
      identityCommitment: again,
      signature: arrival[0]!.wallet.sign(identityMessage(roomId, again)),
    });
    expect([second.status, second.body.code]).toEqual([409, 'identity_already_registered']);
    expect(await dumpedClaims(roomId)).toHaveLength(8);
    expect(await leaves(roomId)).toHaveLength(8);
  });
});
