// Sealed auctions over HTTP with real wallets: nothing about bids shows before finalization; first and
// second price; ties, a sole bidder, an unrevealed and a late bid follow the rules stated up front; the
// package recomputes offline and a tampered one fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bidCommitment, bidMessage } from '../../shared/auctions/commitments';
import { verifyAuctionPackage } from '../../shared/auctions/package';
import type { AuctionPackage } from '../../shared/auctions/package';
import { logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import { TestClock } from '../clock';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, captureLogs, salt, wallet } from '../governance/helpers';
import type { Wallet } from '../governance/helpers';

let app: TestApp;
// The service's clock: the windows are moved past, not waited out (only the service reads them here).
const clock = new TestClock();
let logs: ReturnType<typeof captureLogs>;
// The package key, and the log key that signs the tree heads of packages logged since it existed.
const keys = () => ({ publicKey: serviceSigningKey().publicKey, logPublicKey: logSigningKey().publicKey });
const [a, b, c, d, e, f, g] = [wallet(), wallet(), wallet(), wallet(), wallet(), wallet(), wallet()] as const;
const outsider = wallet();
let biddingEndsAt: string;
let revealEndsAt: string;
const ids: Record<'second' | 'sole' | 'first' | 'room', string> = {
  second: '',
  sole: '',
  first: '',
  room: '',
};
const openings = new Map<string, { amount: string; salt: string }>();

const create = async (body: Record<string, unknown>) =>
  (
    await app.request
      .post('/api/auctions')
      .set('Authorization', OPERATOR)
      .send({ title: 'Lot 7', asset: 'USDC-SOL', biddingEndsAt, revealEndsAt, ...body })
      .expect(201)
  ).body;

function bid(auctionId: string, w: Wallet, amount: string, signer = w, keep = true) {
  const s = salt();
  const commitment = bidCommitment(amount, s, w.address);
  if (keep) openings.set(`${auctionId}:${w.address}`, { amount, salt: s });
  const depositRef = `deposit-tx-${w.address.slice(0, 6)}`;
  return app.request.post(`/api/auctions/${auctionId}/bids`).send({
    bidder: w.address,
    commitment,
    depositRef,
    signature: signer.sign(bidMessage(auctionId, commitment, depositRef)),
  });
}

const reveal = (auctionId: string, w: Wallet) =>
  app.request
    .post(`/api/auctions/${auctionId}/reveals`)
    .send({ bidder: w.address, ...openings.get(`${auctionId}:${w.address}`)! });

beforeAll(async () => {
  logs = captureLogs();
  app = testApp({ clock });
  // Windows wide enough for ten bids and their checks on a loaded machine, short enough to wait out.
  biddingEndsAt = new Date(Date.now() + 8000).toISOString();
  revealEndsAt = new Date(Date.now() + 12_000).toISOString();
  const roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Bidders', members: [a.address] })
      .expect(201)
  ).body.roomId;
  ids.second = (await create({ pricing: 'second', reserve: '50', unrevealedDeposit: 'forfeited' })).auctionId;
  ids.sole = (await create({ pricing: 'second', reserve: '40' })).auctionId;
  ids.first = (await create({ pricing: 'first' })).auctionId;
  ids.room = (await create({ pricing: 'first', roomId })).auctionId;
});
afterAll(async () => {
  logs.stop();
  await app.close();
});

describe('sealed auctions', () => {
  it('states its rules up front and shows nothing of bids while bidding', async () => {
    const bids: Array<[string, Wallet, string]> = [
      [ids.second, a, '100'],
      [ids.second, b, '300'],
      [ids.second, c, '300'],
      [ids.second, d, '900'],
      [ids.second, e, '20'],
      [ids.second, f, '800'],
      [ids.sole, a, '70'],
      [ids.first, b, '50'],
      [ids.first, g, '80'],
      [ids.room, a, '10'],
    ];
    for (const [id, w, amount] of bids) await bid(id, w, amount).expect(201);
    expect((await bid(ids.second, a, '1', a, false)).body.code).toBe('already_bid');
    expect((await bid(ids.room, outsider, '5', outsider, false)).body.code).toBe('not_a_member');
    expect((await bid(ids.first, c, '5', outsider, false)).body.code).toBe('signature_invalid');
    expect((await reveal(ids.second, a)).body.code).toBe('reveal_not_open');

    const view = await app.request.get(`/api/auctions/${ids.second}`).expect(200);
    expect(view.body).toMatchObject({ status: 'bidding', pricing: 'second', result: null });
    expect(Object.keys(view.body.rules).sort()).toEqual(
      [
        'commitment',
        'deposits',
        'lateReveal',
        'noReveal',
        'pricing',
        'reserve',
        'reveal',
        'secrecy',
        'soleBidder',
        'ties',
      ].sort(),
    );
    expect(view.body.rules.noReveal).toContain('forfeited');
    const page = await app.request.get(`/auctions/${ids.second}/`).expect(200);
    expect(page.text).toContain('data-status="bidding"');
    const metrics = await app.request.get('/metrics');
    for (const text of [view.text, page.text, metrics.text, logs.lines.join('\n')]) {
      for (const w of [a, b, c, d, e, f]) expect(text).not.toContain(w.address);
      for (const o of openings.values()) expect(text).not.toContain(o.salt);
      expect(text).not.toMatch(/"(bids|count|leader|highest)"/);
    }
  });

  it('reveals in the window, keeps amounts hidden until finalization, records late reveals', async () => {
    clock.advanceTo(biddingEndsAt);
    expect((await bid(ids.second, g, '5', g, false)).body.code).toBe('bidding_closed');
    for (const w of [a, b, c, e]) expect((await reveal(ids.second, w).expect(200)).body.late).toBe(false);
    await reveal(ids.sole, a).expect(200);
    await reveal(ids.first, b).expect(200);
    await reveal(ids.first, g).expect(200);
    const wrong = await app.request
      .post(`/api/auctions/${ids.second}/reveals`)
      .send({ bidder: f.address, amount: '801', salt: openings.get(`${ids.second}:${f.address}`)!.salt });
    expect(wrong.body.code).toBe('reveal_mismatch');
    const noBid = await app.request
      .post(`/api/auctions/${ids.second}/reveals`)
      .send({ bidder: outsider.address, amount: '1', salt: salt() });
    expect(noBid.body.code).toBe('reveal_mismatch');
    const view = await app.request.get(`/api/auctions/${ids.second}`).expect(200);
    expect(view.body).toMatchObject({ status: 'reveal', result: null });
    expect(view.text).not.toContain('"300"');
    const early = await app.request
      .post(`/api/auctions/${ids.second}/finalize`)
      .set('Authorization', OPERATOR);
    expect(early.body.code).toBe('auction_open');

    clock.advanceTo(revealEndsAt);
    // Past the window but not yet finalized: recorded, as late.
    expect((await reveal(ids.second, f).expect(200)).body.late).toBe(true);
  });

  it('second price: tie to the earliest commitment, unrevealed excluded and forfeited, late excluded and refunded', async () => {
    const done = await app.request
      .post(`/api/auctions/${ids.second}/finalize`)
      .set('Authorization', OPERATOR)
      .expect(200);
    expect(done.body.result).toMatchObject({
      winner: b.address,
      price: '300',
      reason: 'tie_earliest_commit',
      counts: { bids: 6, valid: 3, unrevealed: 1, late: 1, belowReserve: 1 },
    });
    const pkg = (await app.request.get(`/api/auctions/${ids.second}/package`).expect(200))
      .body as AuctionPackage;
    // Each bidder finds their own bid by its commitment: only the winner is named in the package.
    const commitmentOf = (w: Wallet) => {
      const o = openings.get(`${ids.second}:${w.address}`)!;
      return bidCommitment(o.amount, o.salt, w.address);
    };
    const fate = Object.fromEntries(
      [b, c, d, e, f].map((w) => [w.address, pkg.outcome.bids.find((x) => x.commitment === commitmentOf(w))]),
    );
    const text = JSON.stringify(pkg);
    expect(text).toContain(b.address);
    for (const w of [a, c, d, e, f]) {
      expect(text).not.toContain(w.address);
      expect(text).not.toContain(`deposit-tx-${w.address.slice(0, 6)}`);
      expect(text).not.toContain(openings.get(`${ids.second}:${w.address}`)!.salt);
    }
    const losing = pkg.bids.find((x) => x.commitment === commitmentOf(c))!;
    expect(losing).toMatchObject({ bidder: null, depositRef: null, reveal: { amount: '300', salt: null } });
    expect(fate[b.address]).toMatchObject({ status: 'valid', deposit: 'applied_to_price' });
    expect(fate[c.address]).toMatchObject({ status: 'valid', deposit: 'refunded' });
    expect(fate[d.address]).toMatchObject({ status: 'unrevealed', deposit: 'forfeited' });
    expect(fate[e.address]).toMatchObject({ status: 'below_reserve', deposit: 'refunded' });
    expect(fate[f.address]).toMatchObject({ status: 'late', deposit: 'refunded' });
    const verdict = verifyAuctionPackage(pkg, keys());
    expect(verdict.reasons).toEqual([]);
    expect(verdict).toMatchObject({ valid: true, inclusionValid: true });
    expect((await reveal(ids.second, d)).body.code).toBe('auction_finalized');

    const page = await app.request.get(`/auctions/${ids.second}/`).expect(200);
    expect(page.text).toContain(b.address);
    expect(page.text).toMatch(/Outcome follows the stated rules<\/th><td><span class="yes">yes/);
    // Amounts as a person reads them (USDC has 6 decimals), the base units the package counts kept beside.
    expect(page.text).toContain('<span id="price" data-base-units="300">0.0003 USDC</span>');
    expect(page.text).toMatch(/<td><span data-base-units="300">0\.0003 USDC<\/span><\/td>/);
    expect(page.text).not.toMatch(/<td>300<\/td>/);
  });

  it('sole bidder pays the reserve under second price; first price pays the winning bid', async () => {
    const sole = await app.request.get(`/api/auctions/${ids.sole}`).expect(200);
    expect(sole.body.result).toMatchObject({ winner: a.address, price: '40', reason: 'sole_bidder' });
    const first = await app.request.get(`/api/auctions/${ids.first}`).expect(200);
    expect(first.body.result).toMatchObject({ winner: g.address, price: '80', reason: 'highest_bid' });
    const room = await app.request.get(`/api/auctions/${ids.room}`).expect(200);
    expect(room.body).toMatchObject({
      visibility: 'private-room',
      result: { winner: null, reason: 'no_valid_bids' },
    });
    for (const id of [ids.sole, ids.first, ids.room]) {
      const pkg = (await app.request.get(`/api/auctions/${id}/package`).expect(200)).body;
      expect(verifyAuctionPackage(pkg, keys()).reasons).toEqual([]);
    }
  });

  it('detects a tampered package', async () => {
    const pkg = (await app.request.get(`/api/auctions/${ids.second}/package`).expect(200))
      .body as AuctionPackage;
    const bumped = structuredClone(pkg);
    bumped.bids.find((x) => x.bidder === null && x.reveal?.amount === '300')!.reveal!.amount = '1000';
    expect(verifyAuctionPackage(bumped, keys())).toMatchObject({ valid: false, revealsValid: false });
    const stolen = structuredClone(pkg);
    stolen.outcome.winner = c.address;
    expect(verifyAuctionPackage(stolen, keys())).toMatchObject({
      valid: false,
      outcomeValid: false,
      signatureValid: false,
    });
    const hidden = structuredClone(pkg);
    hidden.bids = hidden.bids.filter((x) => x.reveal !== null);
    expect(verifyAuctionPackage(hidden, keys())).toMatchObject({ valid: false, rootsValid: false });
    const res = await app.request.post('/api/auctions/verify').send({ package: bumped }).expect(200);
    expect(res.body.valid).toBe(false);
  });

  it('answers bad input with problems and writes nothing', async () => {
    const count = async () =>
      Number(((await app.deps.db('auctions').count({ n: '*' }).first()) as { n: string }).n);
    const before = await count();
    const now = Date.now();
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ pricing: 'third' }, 400, 'validation_failed'],
      [{ pricing: 'first', asset: 'DOGE' }, 422, 'unknown_asset'],
      [
        {
          pricing: 'first',
          biddingEndsAt: new Date(now + 5000).toISOString(),
          revealEndsAt: new Date(now + 1000).toISOString(),
        },
        422,
        'reveal_window',
      ],
    ];
    for (const [body, status, code] of cases) {
      const res = await app.request
        .post('/api/auctions')
        .set('Authorization', OPERATOR)
        .send({ title: 'x', asset: 'USDC-SOL', biddingEndsAt, revealEndsAt, ...body });
      expect([res.status, res.body.code]).toEqual([status, code]);
    }
    expect(await count()).toBe(before);
    const bids = await app.deps.db('bids').count({ n: '*' }).first();
    const bad = await app.request
      .post(`/api/auctions/${ids.first}/bids`)
      .send({ bidder: a.address, commitment: 'x' });
    expect(bad.status).toBe(400);
    expect(await app.deps.db('bids').count({ n: '*' }).first()).toEqual(bids);
    expect((await app.request.get('/api/auctions/auc_nope')).status).toBe(400);
  });
});
