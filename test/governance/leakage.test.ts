// During a live vote and live bidding every public surface — routes, pages, /metrics, log lines at trace
// level, and the replies to ballots, bids and refused attempts — reads the same whatever was cast or bid:
// byte for byte, size and status, once the clock-driven fields are normalised. What does not move cannot
// carry a tally, ratio, count, address, amount or leader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Ballot, Identity } from '../../shared/governance/ballot-client';
import { bidCommitment, bidMessage } from '../../shared/auctions/commitments';
import { reviewMessage } from '../../shared/governance/commitments';
import { terminateCurves } from '../../shared/zk';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';
import {
  OPERATOR,
  addIdentities,
  ballotInfo,
  captureLogs,
  makeBallotBody,
  salt,
  until,
  wallet,
} from './helpers';
import type { Wallet } from './helpers';

const OPTIONS = ['option-alpha-7f3e', 'option-beta-2c9d', 'option-gamma-51ab'];
const TITLE = 'Title-private-grant-0c4d';
// Long enough that no window ends during the file; under a minute so time remaining stays two digits
// ("NN s" on the page), which keeps raw response sizes comparable.
const WINDOW_SECONDS = 50;

let app: TestApp;
let logs: ReturnType<typeof captureLogs>;
const reviewers = [wallet(), wallet()];
const voters = Array.from({ length: 7 }, () => wallet());
const bidders = Array.from({ length: 6 }, () => wallet());
const outsider = wallet();
let roomId: string;
let proposalId: string;
// The title and options are public from the start (voters must see what they vote on); what was cast is not.
const secrets: string[] = [];
/** Ballots made by the voters' client before the vote opens: the window is spent casting, not proving. */
const ballots: Ballot[] = [];
const again: Ballot[] = [];
const foreign: Ballot[] = [];
const forged: Ballot[] = [];

beforeAll(async () => {
  logs = captureLogs();
  // The public address a deployment configures (BASE_URL): the pages name it (the voting page's
  // command-line hint), and without it each request's own Host would, which here is a new port each
  // time, not something a ballot changed.
  app = testApp({ urls: { base: 'https://exchange.example' } });
  const all = [...reviewers, ...voters];
  roomId = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Council', members: all.map((w) => w.address) })
      .expect(201)
  ).body.roomId;
  await app.request
    .post(`/api/governance/rooms/${roomId}/committees`)
    .set('Authorization', OPERATOR)
    .send({ slug: 'review', name: 'Review', members: reviewers.map((w) => w.address), threshold: 2 })
    .expect(201);
  proposalId = (
    await app.request
      .post('/api/governance/proposals')
      .set('Authorization', OPERATOR)
      .send({
        roomId,
        title: TITLE,
        options: OPTIONS,
        reviewCommittee: 'review',
        votingSeconds: WINDOW_SECONDS,
      })
      .expect(201)
  ).body.proposalId;
  const identities = await addIdentities(app.request, roomId, voters.length);
  const info = await ballotInfo(app.request, proposalId);
  for (const [i, identity] of identities.entries())
    ballots.push(await makeBallotBody(info, identity, OPTIONS[i % OPTIONS.length]!));
  // voters[0..2] vote alpha, beta, gamma; each then tries again with each option.
  for (const identity of identities.slice(0, 3))
    for (const choice of OPTIONS) again.push(await makeBallotBody(info, identity, choice));
  // An outsider: an identity in another room's tree, proving against that tree's root.
  const otherRoom = (
    await app.request
      .post('/api/governance/rooms')
      .set('Authorization', OPERATOR)
      .send({ name: 'Other' })
      .expect(201)
  ).body.roomId;
  const [stranger] = (await addIdentities(app.request, otherRoom, 1)) as [Identity];
  const strangerInfo = { ...info, roomId: otherRoom, members: [stranger.commitment] };
  for (const choice of OPTIONS) foreign.push(await makeBallotBody(strangerInfo, stranger, choice));
  // A forgery: voters[3]'s valid ballot with its ciphertext changed after proving.
  for (const choice of OPTIONS) {
    const b = await makeBallotBody(info, identities[3]!, choice);
    const ct = Buffer.from(b.ciphertext, 'base64url');
    ct[60] = ct[60]! ^ 1;
    forged.push({ ...b, ciphertext: ct.toString('base64url') });
  }
  for (const r of reviewers)
    await app.request
      .post(`/api/governance/proposals/${proposalId}/review`)
      .send({
        walletPublicKey: r.address,
        decision: 'approve',
        signature: r.sign(reviewMessage(proposalId, 'approve')),
      })
      .expect(200);
  secrets.push(...[...all, ...bidders].map((w) => w.address));
  secrets.push(...identities.flatMap((i) => [i.secret, i.commitment]));
  secrets.push(...[...ballots, ...again].map((b) => b.nullifier));
}, 240_000);
afterAll(async () => {
  logs.stop();
  await app.close();
  await terminateCurves();
});

// --- Observation

type Res = Awaited<ReturnType<TestApp['request']['get']>>;

/** One reading of a surface, with the clock-driven fields (time remaining, probe time) normalised. */
interface Reading {
  what: string;
  status: number;
  size: number;
  body: string;
  headers: Record<string, string>;
}

// Set per request (request id, date, rate-limit budget) or a function of the body, which is compared itself.
const VOLATILE_HEADERS = new Set(['date', 'x-request-id', 'ratelimit-remaining', 'etag', 'content-length']);

const normalise = (text: string) =>
  text
    .replace(/"timeRemainingSeconds":\d+/g, '"timeRemainingSeconds":0')
    .replace(/open for \d+ more seconds/g, 'open for N more seconds')
    .replace(/id="time-remaining">[^<]*</g, 'id="time-remaining">T<')
    .replace(/"latencyMs":(null|[\d.]+)/g, '"latencyMs":0')
    .replace(/"checkedAt":"[^"]*"/g, '"checkedAt":"T"')
    // A page's script nonce is fresh for each response (fixed width: the size does not move).
    .replace(/nonce="[A-Za-z0-9+/=]+"/g, 'nonce="N"');

function reading(what: string, res: Res, bodyOf: (text: string) => string = normalise): Reading {
  const headers = Object.fromEntries(
    Object.entries(res.headers as Record<string, string>)
      .filter(([k]) => !VOLATILE_HEADERS.has(k))
      .map(([k, v]) => [k, k === 'content-security-policy' ? v.replace(/'nonce-[^']+'/g, "'nonce-N'") : v]),
  );
  return { what, status: res.status, size: Buffer.byteLength(res.text), body: bodyOf(res.text), headers };
}

/** Readings whose raw size may change only with a normalised field of variable width (a latency). */
const sizeExempt = new Set(['GET /api/coordination/providers/status']);

function expectSame(readings: Reading[], baseline: Reading[]): void {
  expect(readings.map((r) => r.what)).toEqual(baseline.map((r) => r.what));
  for (const [i, r] of readings.entries()) {
    const b = baseline[i]!;
    expect({ status: r.status, headers: r.headers }, r.what).toEqual({
      status: b.status,
      headers: b.headers,
    });
    expect(r.body, r.what).toBe(b.body);
    if (!sizeExempt.has(r.what)) expect(r.size, `${r.what} size`).toBe(b.size);
  }
}

const get = (path: string, auth = false) => {
  const req = app.request.get(path);
  return auth ? req.set('Authorization', OPERATOR) : req;
};
const post = (path: string, body?: object, auth = false) => {
  const req = app.request.post(path);
  if (auth) req.set('Authorization', OPERATOR);
  return body ? req.send(body) : req;
};

async function surfaces(list: Array<[string, () => Promise<Res>]>): Promise<Reading[]> {
  const out: Reading[] = [];
  for (const [what, call] of list) out.push(reading(what, await call()));
  return out;
}

function proposalSurfaces(): Promise<Reading[]> {
  const p = `/api/governance/proposals/${proposalId}`;
  return surfaces([
    [`GET ${p}`, () => get(p)],
    [`GET ${p}/package`, () => get(`${p}/package`)],
    [`GET ${p}/package?phase=tallied`, () => get(`${p}/package?phase=tallied`)],
    [`GET ${p}/package?phase=executed`, () => get(`${p}/package?phase=executed`)],
    [`GET /governance/proposals/${proposalId}/`, () => get(`/governance/proposals/${proposalId}/`)],
    [`GET ${p}/admin`, () => get(`${p}/admin`, true)],
    [`POST ${p}/close`, () => post(`${p}/close`, undefined, true)],
    [`POST ${p}/execution`, () => post(`${p}/execution`, { evidenceHash: 'e'.repeat(64) }, true)],
    [`GET /api/governance/rooms/${roomId}`, () => get(`/api/governance/rooms/${roomId}`, true)],
    [`GET ${p}/ballot-key`, () => get(`${p}/ballot-key`)],
    [`GET /api/governance/rooms/${roomId}/tree`, () => get(`/api/governance/rooms/${roomId}/tree`)],
    ['GET /api/coordination/providers/status', () => get('/api/coordination/providers/status')],
  ]);
}

/** The HTTP series of /metrics (process gauges such as heap and CPU move on their own and carry nothing). */
async function httpMetrics(): Promise<Map<string, string>> {
  const text = (await get('/metrics').expect(200)).text;
  for (const s of secrets) expect(text).not.toContain(s);
  const series = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('px_') || line.startsWith('px_process_') || line.startsWith('px_nodejs_')) continue;
    // The scrape itself is counted; it is the observer, not the observed.
    if (line.includes('route="/metrics"')) continue;
    const at = line.lastIndexOf(' ');
    series.set(line.slice(0, at), line.slice(at + 1));
  }
  return series;
}

const changed = (before: Map<string, string>, after: Map<string, string>) =>
  [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));

/** Log lines as a reader would compare them: request id, timestamps and durations set aside. */
function logLines(from: number): string[] {
  const entries = logs.lines
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown> & { req?: { id?: unknown; url?: unknown } });
  // The scrape's own line is the observer's, not the observed's: on a loaded machine it may be written
  // after the next mark, so it is no line of what is observed.
  return entries
    .filter((entry) => entry.req?.url !== '/metrics')
    .map((entry) => {
      delete entry.time;
      delete entry.responseTime;
      delete entry.pid;
      delete entry.hostname;
      if (entry.req) delete entry.req.id;
      return JSON.stringify(entry);
    });
}

/** The request log writes its line on the response's finish; let it land before slicing. */
const settle = () => new Promise((r) => setTimeout(r, 10));

/**
 * One sealed action observed from every side: /metrics around it (nothing may move), the log lines it
 * wrote, and its reply (fixed-length ids, hashes, times and signatures normalised to their shape).
 */
async function observe(act: () => Promise<Res>, shape: (text: string) => string) {
  const before = await httpMetrics();
  await settle();
  const mark = logs.lines.length;
  const res = await act();
  await settle();
  const lines = logLines(mark);
  const after = await httpMetrics();
  return { reply: reading('reply', res, shape), lines, metricsChanged: changed(before, after) };
}

const shapeOf = (fields: string[]) => (text: string) => {
  const body = JSON.parse(text) as Record<string, unknown>;
  for (const f of fields) if (typeof body[f] === 'string') body[f] = `<${(body[f] as string).length}>`;
  return JSON.stringify(body);
};

// --- Governance

const castBallot = (body: object) => post(`/api/governance/proposals/${proposalId}/ballots`, body);

describe('a live vote', () => {
  it('shows the same bytes, sizes and statuses on every public surface after each ballot, whatever its choice', async () => {
    const baseline = await proposalSurfaces();
    expect(baseline[0]!.status).toBe(200);
    expect(JSON.parse(baseline[0]!.body)).toMatchObject({ status: 'voting' });
    expect(baseline.find((r) => r.what.endsWith('/close'))!.status).toBe(409);
    await settle();
    const mark = logs.lines.length;
    await proposalSurfaces();
    await settle();
    const pollLines = logLines(mark);
    expect(pollLines.length).toBeGreaterThan(0);

    const replies: Reading[] = [];
    for (const body of ballots) {
      const seen = await observe(() => castBallot(body), shapeOf(['ballotDigest', 'signature']));
      expect(seen.reply.status, seen.reply.body).toBe(201);
      expect(seen.metricsChanged, 'metrics moved on a ballot').toEqual([]);
      expect(seen.lines, 'a ballot wrote log lines').toEqual([]);
      replies.push(seen.reply);

      const state = JSON.parse((await get(`/api/governance/proposals/${proposalId}`)).text);
      expect(state.timeRemainingSeconds).toBeGreaterThanOrEqual(10);
      await settle();
      const at = logs.lines.length;
      expectSame(await proposalSurfaces(), baseline);
      await settle();
      expect(logLines(at), 'log lines of the public surfaces').toEqual(pollLines);
    }
    // Every ballot was taken (the surfaces were still, not broken).
    expect(await app.deps.db('ballots').where('proposal_id', proposalId).count({ n: '*' })).toEqual([
      { n: String(voters.length) },
    ]);
    // The receipt has one shape and size whatever the choice.
    for (const r of replies) expectSame([r], [replies[0]!]);
  });

  it('refuses a second ballot, an outsider and a forgery with replies that do not depend on any choice', async () => {
    const replies: Reading[] = [];
    const lines: string[][] = [];
    for (const body of again) {
      const seen = await observe(() => castBallot(body), normalise);
      expect(seen.metricsChanged).toEqual([]);
      replies.push(seen.reply);
      lines.push(seen.lines);
    }
    expect(replies[0]!.status).toBe(409);
    expect(JSON.parse(replies[0]!.body).code).toBe('already_voted');
    for (const r of replies) expectSame([r], [replies[0]!]);
    for (const l of lines) expect(l).toEqual(lines[0]);

    const refusals = async (bodies: Ballot[]) => {
      const out: Reading[] = [];
      for (const body of bodies) out.push(reading('refusal', await castBallot(body)));
      for (const r of out) expectSame([r], [out[0]!]);
      return JSON.parse(out[0]!.body).code as string;
    };
    expect(await refusals(foreign)).toBe('unknown_root');
    expect(await refusals(forged)).toBe('proof_invalid');
    expect(await app.deps.db('ballots').where('proposal_id', proposalId).count({ n: '*' })).toEqual([
      { n: String(voters.length) },
    ]);
  });

  it('writes no choice, address, identity or nullifier to any log line, even at trace level', () => {
    const text = logs.lines.join('\n');
    expect(logs.lines.length).toBeGreaterThan(0);
    for (const s of secrets) expect(text).not.toContain(s);
  });
});

// --- Auctions

const bidBody = (auctionId: string, w: Wallet, amount: string, s = salt()) => {
  const commitment = bidCommitment(amount, s, w.address);
  const depositRef = `deposit-${w.address.slice(0, 8)}`;
  return {
    bidder: w.address,
    commitment,
    depositRef,
    signature: w.sign(bidMessage(auctionId, commitment, depositRef)),
  };
};

async function createAuction(biddingMs: number, revealMs: number) {
  const now = Date.now();
  const res = await post(
    '/api/auctions',
    {
      title: 'Lot 12',
      pricing: 'second',
      asset: 'USDC-SOL',
      reserve: '10',
      biddingEndsAt: new Date(now + biddingMs).toISOString(),
      revealEndsAt: new Date(now + revealMs).toISOString(),
    },
    true,
  ).expect(201);
  return res.body as { auctionId: string; biddingEndsAt: string };
}

function auctionSurfaces(id: string, revealer: Wallet): Promise<Reading[]> {
  const p = `/api/auctions/${id}`;
  return surfaces([
    [`GET ${p}`, () => get(p)],
    [`GET ${p}/package`, () => get(`${p}/package`)],
    [`GET /auctions/${id}/`, () => get(`/auctions/${id}/`)],
    [`POST ${p}/finalize`, () => post(`${p}/finalize`, undefined, true)],
    [
      `POST ${p}/reveals`,
      () => post(`${p}/reveals`, { bidder: revealer.address, amount: '1', salt: 'a'.repeat(64) }),
    ],
    ['GET /api/coordination/providers/status', () => get('/api/coordination/providers/status')],
  ]);
}

describe('live bidding', () => {
  let live: string;
  // A second auction whose bidding ends at once, for the reveal window.
  let quick: { auctionId: string; biddingEndsAt: string };
  const quickOpening = { amount: '500', salt: salt() };

  beforeAll(async () => {
    live = (await createAuction(WINDOW_SECONDS * 1000, (WINDOW_SECONDS + 30) * 1000)).auctionId;
    quick = await createAuction(5000, WINDOW_SECONDS * 1000);
    await post(
      `/api/auctions/${quick.auctionId}/bids`,
      bidBody(quick.auctionId, bidders[0]!, quickOpening.amount, quickOpening.salt),
    ).expect(201);
    secrets.push(quickOpening.salt);
  });

  it('shows the same bytes, sizes and statuses on every public surface after each bid, whatever its amount', async () => {
    const baseline = await auctionSurfaces(live, bidders[0]!);
    expect(JSON.parse(baseline[0]!.body)).toMatchObject({ status: 'bidding', result: null });
    expect(baseline.map((r) => r.status)).toEqual([200, 409, 200, 409, 409, 200]);

    const amounts = ['1', '999999', '50', '123456789012345678901234567890', '7', '50'];
    const replies: Reading[] = [];
    for (const [i, bidder] of bidders.entries()) {
      const body = bidBody(live, bidder, amounts[i]!);
      const seen = await observe(
        () => post(`/api/auctions/${live}/bids`, body),
        shapeOf(['bidId', 'commitment', 'committedAt']),
      );
      expect(seen.reply.status, seen.reply.body).toBe(201);
      expect(seen.metricsChanged, 'metrics moved on a bid').toEqual([]);
      expect(seen.lines, 'a bid wrote log lines').toEqual([]);
      replies.push(seen.reply);
      expectSame(await auctionSurfaces(live, bidders[0]!), baseline);
    }
    for (const r of replies) expectSame([r], [replies[0]!]);

    // A second bid from the same wallet is refused alike whatever the amount.
    const again: Reading[] = [];
    for (const amount of ['2', '88888888888']) {
      const seen = await observe(
        () => post(`/api/auctions/${live}/bids`, bidBody(live, bidders[1]!, amount)),
        normalise,
      );
      expect(seen.metricsChanged).toEqual([]);
      again.push(seen.reply);
    }
    expect(JSON.parse(again[0]!.body).code).toBe('already_bid');
    expectSame([again[1]!], [again[0]!]);
  });

  it('answers a reveal the same whether or not the bidder has a bid', async () => {
    const reveal = (bidder: Wallet, opening: { amount: string; salt: string }) =>
      observe(
        () => post(`/api/auctions/${quick.auctionId}/reveals`, { bidder: bidder.address, ...opening }),
        normalise,
      );
    const cases = (): Array<[Wallet, { amount: string; salt: string }]> => [
      [outsider, quickOpening], // no bid at all
      [bidders[0]!, { amount: '501', salt: quickOpening.salt }], // a bid, wrong amount
      [bidders[0]!, { amount: quickOpening.amount, salt: salt() }], // a bid, wrong salt
      [bidders[1]!, { amount: '1', salt: salt() }], // a bid elsewhere, none here
    ];
    // While bidding: not open, for everyone, even with the right opening.
    const early: Reading[] = [];
    for (const [w, o] of [...cases(), [bidders[0]!, quickOpening] as const]) {
      const seen = await reveal(w, o);
      expect(seen.metricsChanged).toEqual([]);
      early.push(seen.reply);
    }
    expect(JSON.parse(early[0]!.body).code).toBe('reveal_not_open');
    for (const r of early) expectSame([r], [early[0]!]);

    await until(quick.biddingEndsAt);
    const baseline = await auctionSurfaces(quick.auctionId, outsider);
    expect(JSON.parse(baseline[0]!.body)).toMatchObject({ status: 'reveal', result: null });
    const refused: Reading[] = [];
    const lines: string[][] = [];
    for (const [w, o] of cases()) {
      const seen = await reveal(w, o);
      expect(seen.metricsChanged).toEqual([]);
      refused.push(seen.reply);
      lines.push(seen.lines);
    }
    expect(refused[0]!.status).toBe(422);
    expect(JSON.parse(refused[0]!.body).code).toBe('reveal_mismatch');
    for (const r of refused) expectSame([r], [refused[0]!]);
    for (const l of lines) expect(l).toEqual(lines[0]);

    // A valid reveal moves nothing public either until the window ends.
    const ok = await reveal(bidders[0]!, quickOpening);
    expect(ok.reply.status).toBe(200);
    expect(ok.metricsChanged).toEqual([]);
    expect(ok.lines).toEqual([]);
    expectSame(await auctionSurfaces(quick.auctionId, outsider), baseline);
  });

  it('writes no address, amount opening or salt to any log line', () => {
    const text = logs.lines.join('\n');
    for (const s of secrets) expect(text).not.toContain(s);
  });
});
