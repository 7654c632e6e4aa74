// Sealed auctions revealed by a room's trustees: each bid carries its opening sealed to the trustees'
// joint key; nothing is handed out before the reveal window ends; afterwards 2 of 3 trustees (one
// offline, one through `npm run trustee`) open every bid, so a bidder who never reveals is revealed all
// the same, and the package verifies. A sealed opening copied from another bid is refused; a wrong
// partial decryption is caught by its proof.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { verifyAuctionPackage } from '../../shared/auctions/package';
import type { AuctionPackage } from '../../shared/auctions/package';
import { sealBidOpening } from '../../shared/auctions/sealed-openings';
import { bidCommitment, bidMessage } from '../../shared/auctions/commitments';
import {
  DECRYPTION_KIND,
  auctionOpeningContext,
  ballotEphemeral,
  decryptionStatement,
  partialDecrypt,
  trusteeKeysFrom,
  trusteeMessage,
} from '../../shared/governance/threshold';
import type { PartialDecryption } from '../../shared/governance/threshold';
import {
  ceremonyRound,
  decryptAuction,
  fetchCeremony,
  newTrusteeFile,
  secretShareOf,
  trusteePublicKeys,
} from '../../shared/governance/trustee-client';
import type { TrusteeFile } from '../../shared/governance/trustee-client';
import { logSigningKey, serviceSigningKey } from '../../shared/platform/keys';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import { OPERATOR, salt, until, wallet } from '../governance/helpers';
import type { Wallet } from '../governance/helpers';

const execFileAsync = promisify(execFile);
let app: TestApp;
let server: http.Server;
let url: string;
let dir: string;
let roomId: string;
let jointKey: string;
let auctionId: string;
let revealEndsAt: string;
const files: TrusteeFile[] = [newTrusteeFile(), newTrusteeFile(), newTrusteeFile()];
const [alice, bob, carol] = [wallet(), wallet(), wallet()] as const;
const openings = new Map<string, { amount: string; salt: string; commitment: string }>();

/** A trustee's decryption set as its client posts it: signed over its statement with the trustee's key. */
const signedSet = (
  file: TrusteeFile,
  auctionId: string,
  trustee: number,
  shares: Array<PartialDecryption & { bidId: string }>,
) => ({
  trustee,
  shares,
  signature: trusteeKeysFrom(file.secret).signer.sign(
    trusteeMessage(roomId, DECRYPTION_KIND, decryptionStatement({ auctionId }, shares)),
  ),
});

function sealedBid(w: Wallet, amount: string, override?: { sealedOpening?: string }) {
  const s = salt();
  const commitment = bidCommitment(amount, s, w.address);
  openings.set(w.address, { amount, salt: s, commitment });
  const depositRef = `deposit-${w.address.slice(0, 6)}`;
  return app.request.post(`/api/auctions/${auctionId}/bids`).send({
    bidder: w.address,
    commitment,
    depositRef,
    signature: w.sign(bidMessage(auctionId, commitment, depositRef)),
    sealedOpening: sealBidOpening(jointKey, auctionId, commitment, { amount, salt: s }),
    ...override,
  });
}

beforeAll(async () => {
  app = testApp();
  server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'px-auction-trustees-'));
  roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Bidders', members: [alice.address, bob.address, carol.address] })
      .expect(201)
  ).body.roomId as string;
  await app.request
    .post(`/api/governance/rooms/${roomId}/trustees`)
    .set('Authorization', OPERATOR)
    .send({ threshold: 2, trustees: files.map((f, i) => ({ name: `T${i + 1}`, ...trusteePublicKeys(f) })) })
    .expect(201);
  for (let round = 0; round < 2; round++)
    for (const [i, f] of files.entries()) files[i] = (await ceremonyRound(url, roomId, f)).file;
  jointKey = (await fetchCeremony(url, roomId)).jointKey!;
  const now = Date.now();
  revealEndsAt = new Date(now + 9000).toISOString();
  const created = (
    await app.request
      .post('/api/auctions')
      .set('Authorization', OPERATOR)
      .send({
        title: 'Lot 12',
        asset: 'USDC-SOL',
        pricing: 'second',
        roomId,
        revealBy: 'trustees',
        unrevealedDeposit: 'forfeited',
        biddingEndsAt: new Date(now + 6000).toISOString(),
        revealEndsAt,
      })
      .expect(201)
  ).body;
  auctionId = created.auctionId as string;
  expect(created.trustees.jointKey).toBe(jointKey);
  expect(created.rules.trustees).toMatch(/joint key of the room’s trustees/);
}, 60_000);

afterAll(async () => {
  server?.close();
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a sealed auction revealed by trustees', () => {
  it('takes bids with sealed openings and refuses one without, a copied one, or one for a room without trustees', async () => {
    await sealedBid(alice, '120').expect(201);
    await sealedBid(bob, '90').expect(201);
    // Carol's opening is copied from Alice's bid: its proof names Alice's commitment, not Carol's.
    await sealedBid(carol, '200', {
      sealedOpening: sealBidOpening(jointKey, auctionId, openings.get(alice.address)!.commitment, {
        amount: '200',
        salt: openings.get(alice.address)!.salt,
      }),
    })
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('invalid_sealed_opening'));
    // Without a sealed opening.
    const s = salt();
    const commitment = bidCommitment('200', s, carol.address);
    await app.request
      .post(`/api/auctions/${auctionId}/bids`)
      .send({
        bidder: carol.address,
        commitment,
        depositRef: 'deposit-carol',
        signature: carol.sign(bidMessage(auctionId, commitment, 'deposit-carol')),
      })
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('sealed_opening_required'));
    expect(await app.deps.db('bids').where({ auction_id: auctionId, bidder: carol.address })).toHaveLength(0);
    await sealedBid(carol, '150').expect(201);
    // An auction revealed by trustees needs a room whose ceremony has ended.
    const other = (
      await app.request
        .post('/api/governance/rooms')
        .set('Authorization', OPERATOR)
        .send({ name: 'No trustees', members: [] })
        .expect(201)
    ).body.roomId;
    await app.request
      .post('/api/auctions')
      .set('Authorization', OPERATOR)
      .send({
        title: 'Lot 13',
        asset: 'USDC-SOL',
        pricing: 'first',
        roomId: other,
        revealBy: 'trustees',
        biddingEndsAt: new Date(Date.now() + 60_000).toISOString(),
        revealEndsAt: new Date(Date.now() + 120_000).toISOString(),
      })
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('trustees_not_ready'));
  }, 60_000);

  it('hands out nothing of the bids before the reveal window ends, and no trustee decrypts', async () => {
    await app.request
      .get(`/api/auctions/${auctionId}/sealed-bids`)
      .expect(409)
      .expect((r) => expect(r.body.code).toBe('reveal_open'));
    await expect(decryptAuction(url, auctionId, files[0]!)).rejects.toThrow(/decrypts only after/);
    await app.request
      .post(`/api/auctions/${auctionId}/decryptions`)
      .send(signedSet(files[0]!, auctionId, 1, []))
      .expect(409);
    expect(await app.deps.db('auction_decryptions').where('auction_id', auctionId)).toHaveLength(0);
  });

  it('after the window, 2 of 3 trustees open every bid, the unrevealed one too; a wrong partial is caught', async () => {
    // Bob reveals himself; Alice and Carol never do.
    await until(new Date(Date.parse(revealEndsAt) - 2500));
    await app.request
      .post(`/api/auctions/${auctionId}/reveals`)
      .send({ bidder: bob.address, amount: '90', salt: openings.get(bob.address)!.salt })
      .expect(200);
    await until(revealEndsAt);
    expect((await app.request.get(`/api/auctions/${auctionId}`).expect(200)).body).toMatchObject({
      status: 'awaiting_trustees',
      trusteesDecrypted: 0,
      trusteesNeeded: 2,
      result: null,
    });
    // Trustee 1 through the CLI.
    writeFileSync(join(dir, 't1.json'), JSON.stringify(files[0]));
    const one = JSON.parse(
      (
        await execFileAsync(
          process.execPath,
          [
            '--import',
            'tsx',
            'cli/trustee.ts',
            'decrypt-auction',
            '--url',
            url,
            '--auction',
            auctionId,
            '--key',
            join(dir, 't1.json'),
          ],
          { env: { ...process.env, LOG_LEVEL: 'silent' } },
        )
      ).stdout,
    );
    expect(one).toMatchObject({ trusteesDecrypted: 1, trusteesNeeded: 2 });
    expect((await app.request.get(`/api/auctions/${auctionId}`)).body.status).toBe('awaiting_trustees');
    // Trustee 3 tries a wrong partial: refused, nothing written.
    const listed = (await app.request.get(`/api/auctions/${auctionId}/sealed-bids`).expect(200)).body
      .bids as Array<{
      bidId: string;
      commitment: string;
      sealedOpening: string;
    }>;
    const { index, share } = secretShareOf(await fetchCeremony(url, roomId), files[2]!);
    const partials = listed.map((b) => {
      const context = auctionOpeningContext(auctionId, b.commitment);
      const R = ballotEphemeral(Buffer.from(b.sealedOpening, 'base64url'), context)!;
      return { bidId: b.bidId, ...partialDecrypt(share, index, context, R) };
    });
    const wrong = partials.map((p, i) => (i === 0 ? { ...p, share: partials[1]!.share } : p));
    await app.request
      .post(`/api/auctions/${auctionId}/decryptions`)
      .send(signedSet(files[2]!, auctionId, 3, wrong))
      .expect(422)
      .expect((r) => expect(r.body.code).toBe('decryption_invalid'));
    // Signed by another trustee's key: refused before any proof is checked.
    await app.request
      .post(`/api/auctions/${auctionId}/decryptions`)
      .send({ ...signedSet(files[1]!, auctionId, 3, partials), trustee: 3 })
      .expect(403)
      .expect((r) => expect(r.body.code).toBe('signature_invalid'));
    expect(await app.deps.db('auction_decryptions').where('auction_id', auctionId)).toHaveLength(1);
    // Trustee 2 stays offline; trustee 3's honest partials open the bids and the auction is decided.
    await app.request
      .post(`/api/auctions/${auctionId}/decryptions`)
      .send(signedSet(files[2]!, auctionId, 3, partials))
      .expect(201);
    const decided = (await app.request.get(`/api/auctions/${auctionId}`).expect(200)).body;
    expect(decided.status).toBe('finalized');
    // Second price: Carol (150) wins and pays Alice's 120; nobody is unrevealed.
    expect(decided.result).toMatchObject({
      winner: carol.address,
      price: '120',
      counts: { unrevealed: 0, valid: 3 },
    });
    const rows = (await app.deps.db('bids').where('auction_id', auctionId)) as Array<{
      bidder: string;
      revealed_by: string;
    }>;
    expect(Object.fromEntries(rows.map((r) => [r.bidder, r.revealed_by]))).toEqual({
      [alice.address]: 'trustees',
      [bob.address]: 'bidder',
      [carol.address]: 'trustees',
    });
    const pkg = (await app.request.get(`/api/auctions/${auctionId}/package`).expect(200))
      .body as AuctionPackage;
    expect(pkg.subject.revealBy).toBe('trustees');
    const verdict = verifyAuctionPackage(pkg, {
      publicKey: serviceSigningKey().publicKey,
      logPublicKey: logSigningKey().publicKey,
    });
    expect(verdict.reasons).toEqual([]);
    expect(verdict.valid).toBe(true);
  }, 90_000);
});
