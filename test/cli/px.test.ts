// `npm run px` against a real server (this file's database, the whole app over HTTP), as an
// organization's administrator, its members, voters, bidders and approvers use it, with no code of
// their own: a trial license claimed with a wallet, a room and its committees, identities registered by
// wallet, a proposal reviewed, voted on anonymously (`px ballot`) and executed; a treasury request
// decided m of n; a sealed-bid auction bid, revealed and finalized; a workflow driven to its package
// with an anonymous approval (`px approve`). Each refusal (a wallet that is not a member or reviewer,
// someone else's room, a request file whose terms were changed, a key file others may read) is one line
// on stderr, a non-zero exit, and nothing written. The commands run in this process through px's main
// (cli/px/main.ts), as its command line calls it; a few run as npm runs them (cli/px.ts, a process of
// its own), for the exit codes a shell sees. The server's clock is the test's: a vote's or an auction's
// window is moved past once its clients are done, not waited out.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { main } from '../../cli/px/main';
import type { Output } from '../../cli/px/main';
import { terminateCurves } from '../../cli/io';
import { TestClock } from '../clock';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
const clock = new TestClock();
let server: http.Server;
let url: string;
const dir = mkdtempSync(join(tmpdir(), 'px-cli-'));
const adminKeys = join(dir, 'org', 'keys.json');
const otherKeys = join(dir, 'other', 'keys.json');
const artifacts = join(process.cwd(), 'circuits', 'artifacts');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** The variables `npm run px` runs with here: this file's server and the key file given by PX_KEYS. */
function pxEnv(keys: string): Record<string, string | undefined> {
  const { OPERATOR_TOKEN: _o, ...inherited } = process.env;
  return { ...inherited, PX_URL: url, PX_KEYS: keys, LOG_LEVEL: 'silent' };
}

/** `npm run px -- …` run in this process (its main), with what it writes and its exit code. */
async function px(args: string[], keys = adminKeys): Promise<Ran> {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const into = (chunks: Buffer[]): Output => ({
    write: (chunk) => chunks.push(Buffer.from(chunk)),
  });
  const code = await main(args, { stdout: into(stdout), stderr: into(stderr), env: pxEnv(keys) });
  return {
    code,
    stdout: Buffer.concat(stdout).toString('utf8'),
    stderr: Buffer.concat(stderr).toString('utf8'),
  };
}

/** `npm run px -- …` as a shell runs it (the script npm runs: cli/px.ts), for its real exit code. */
function spawned(args: string[], keys = adminKeys): Promise<Ran> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'cli/px.ts', ...args],
      { env: pxEnv(keys), timeout: 120_000 },
      (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A command that must succeed; its JSON answer. */
async function ok<T = Record<string, unknown>>(args: string[], keys = adminKeys): Promise<T> {
  const r = await px(args, keys);
  expect(r.code, `${args.join(' ')}\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}

/** A command that must be refused: exit 1 and one line naming the problem's status and code. */
async function refused(args: string[], status: number, code: string, keys = adminKeys): Promise<string> {
  const r = await px(args, keys);
  expect(r.code, r.stdout + r.stderr).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(new RegExp(`^refused \\(${status} ${code}\\): \\S`));
  return r.stderr;
}

beforeAll(async () => {
  app = testApp({ clock });
  server = http.createServer(createApp(app.deps)).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The organization's administrator and its members, each a wallet of the organization's key file;
  // an outsider; and another organization with a key file of its own.
  for (const name of ['admin', 'alice', 'bob', 'carol', 'mallory']) await ok(['wallet', 'new', name]);
  await ok(['wallet', 'new', 'other-admin'], otherKeys);
}, 120_000);

afterEach(() => clock.reset());

afterAll(async () => {
  server?.close();
  await app?.close();
  // `px ballot` and `px approve` prove in this process.
  await terminateCurves();
  rmSync(dir, { recursive: true, force: true });
});

const address = async (name: string) => (await px(['wallet', 'address', name])).stdout.trim();
let roomId: string;

describe('npm run px', () => {
  it('keeps keys in a file only its owner reads, never prints a secret, and refuses a file others may read', async () => {
    expect(statSync(adminKeys).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'org')).mode & 0o777).toBe(0o700);
    const kept = JSON.parse(readFileSync(adminKeys, 'utf8')) as { wallets: Record<string, string> };
    const list = await px(['wallet', 'list']);
    for (const seed of Object.values(kept.wallets)) expect(list.stdout).not.toContain(seed);
    // The command line itself (cli/px.ts, as npm runs it) answers as its main does.
    const fromBin = await spawned(['wallet', 'address', 'alice']);
    expect(fromBin.code, fromBin.stderr).toBe(0);
    expect(fromBin.stdout.trim()).toBe(await address('alice'));
    expect(await address('alice')).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    // A name is never reused: the first key would be lost.
    const again = await spawned(['wallet', 'new', 'alice']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already holds a wallet named alice');

    const loose = join(dir, 'loose.json');
    writeFileSync(loose, readFileSync(adminKeys));
    chmodSync(loose, 0o644);
    const r = await px(['wallet', 'list'], loose);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('may be read by others (mode 644)');
  });

  it('claims a TRIAL license with a wallet signature and keeps its key unprinted', async () => {
    const claimed = await px([
      'trial',
      'claim',
      '--wallet',
      'admin',
      '--organization',
      'Walkthrough Org',
      '--email',
      'admin@example.org',
    ]);
    expect(claimed.code, claimed.stderr).toBe(0);
    const license = JSON.parse(readFileSync(adminKeys, 'utf8')).license as { token: string; id: string };
    expect(license.token).toMatch(/^lk_/);
    expect(claimed.stdout).not.toContain(license.token);
    expect(JSON.parse(claimed.stdout)).toMatchObject({ licenseId: license.id, tier: 'TRIAL' });
    // The same wallet cannot claim a second trial (for another organization either).
    const otherWallet = JSON.parse(readFileSync(otherKeys, 'utf8'));
    writeFileSync(
      join(dir, 'copy.json'),
      JSON.stringify({ wallets: { admin: JSON.parse(readFileSync(adminKeys, 'utf8')).wallets.admin } }),
      { mode: 0o600 },
    );
    await refused(
      ['trial', 'claim', '--wallet', 'admin', '--organization', 'Another Org', '--email', 'a@example.org'],
      409,
      'trial_already_used',
      join(dir, 'copy.json'),
    );
    expect(otherWallet.license).toBeUndefined();
    await ok(
      [
        'trial',
        'claim',
        '--wallet',
        'other-admin',
        '--organization',
        'Other Org',
        '--email',
        'o@example.org',
      ],
      otherKeys,
    );
  });

  it('governance: a room, its committee, identities by wallet, a reviewed proposal, anonymous ballots, the tally', async () => {
    const room = await ok<{ roomId: string }>([
      'room',
      'create',
      '--name',
      'Board',
      '--member',
      'alice',
      '--member',
      'bob',
      '--member',
      'carol',
    ]);
    roomId = room.roomId;
    await ok([
      'room',
      'committee',
      roomId,
      '--slug',
      'review',
      '--name',
      'Review',
      '--threshold',
      '2',
      ...['--member', 'alice', '--member', 'bob'],
    ]);
    expect(await ok(['room', 'prove', roomId, '--wallet', 'carol'])).toMatchObject({ member: true });
    expect(await ok(['room', 'prove', roomId, '--wallet', 'mallory'])).toEqual({ member: false });

    // Voters make identities with the ballot client (through px) and register them with their wallets.
    for (const name of ['alice', 'bob']) {
      const made = await px(['ballot', 'identity', '--out', join(dir, `${name}.id.json`)]);
      expect(made.code, made.stderr).toBe(0);
      await ok([
        'identity',
        'register',
        roomId,
        '--wallet',
        name,
        '--identity',
        join(dir, `${name}.id.json`),
      ]);
    }
    // Mallory's wallet is no member: her registration is refused and the tree does not grow.
    await px(['ballot', 'identity', '--out', join(dir, 'mallory.id.json')]);
    await refused(
      ['identity', 'register', roomId, '--wallet', 'mallory', '--identity', join(dir, 'mallory.id.json')],
      403,
      'not_a_member',
    );
    expect(
      (await ok<{ identityCommitments: string[] }>(['room', 'tree', roomId])).identityCommitments,
    ).toHaveLength(2);

    const proposal = await ok<{ proposalId: string }>([
      'proposal',
      'create',
      '--room',
      roomId,
      '--title',
      'Adopt the plan?',
      '--option',
      'yes',
      '--option',
      'no',
      '--committee',
      'review',
      '--voting-seconds',
      '40',
    ]);
    const p = proposal.proposalId;
    // Carol is in the room but not on the committee; mallory in neither.
    await refused(
      ['proposal', 'review', p, '--wallet', 'carol', '--decision', 'approve'],
      403,
      'not_a_reviewer',
    );
    await refused(
      ['proposal', 'review', p, '--wallet', 'mallory', '--decision', 'approve'],
      403,
      'not_a_reviewer',
    );
    expect(await ok(['proposal', 'show', p])).toMatchObject({ status: 'review' });
    await ok(['proposal', 'review', p, '--wallet', 'alice', '--decision', 'approve']);
    expect(await ok(['proposal', 'review', p, '--wallet', 'bob', '--decision', 'approve'])).toMatchObject({
      status: 'voting',
    });

    const vote = (name: string, choice: string) =>
      px([
        'ballot',
        'vote',
        '--proposal',
        p,
        '--identity',
        join(dir, `${name}.id.json`),
        '--choice',
        choice,
        '--artifacts',
        artifacts,
      ]);
    const [a, b] = await Promise.all([vote('alice', 'yes'), vote('bob', 'yes')]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ proposalId: p });
    // Not a member of the tree: the ballot client cannot prove, and nothing is cast.
    const outsider = await vote('mallory', 'no');
    expect(outsider.code).not.toBe(0);
    // Closing early is refused.
    await refused(['proposal', 'close', p], 409, 'voting_open');

    // The 40 seconds pass.
    clock.advance(40_000);
    const closed = await ok(['proposal', 'show', p, '--wait', 'closed', '--timeout', '90']);
    expect(closed).toMatchObject({
      status: 'closed',
      outcome: 'passed',
      winner: 'yes',
      tally: { yes: 2, no: 0 },
      ballotCount: 2,
      countedCount: 2,
      spoiledCount: 0,
    });
    expect(await ok(['proposal', 'execute', p, '--evidence', 'minutes of the board, signed'])).toMatchObject({
      status: 'executed',
    });
  }, 240_000);

  it('names a room’s trustees from the keys each printed, and refuses a trustee’s own secret file', async () => {
    const { newTrusteeFile, trusteePublicKeys, keyFingerprint } =
      await import('../../shared/governance/trustee-client');
    const room = await ok<{ roomId: string }>(['room', 'create', '--name', 'Trusted', '--member', 'alice']);
    const files = ['ana', 'ben', 'chi'].map((name) => {
      const own = newTrusteeFile();
      const keys = trusteePublicKeys(own);
      // What `npm run trustee -- keys` printed, as the trustee sent it; and the trustee's own file.
      writeFileSync(
        join(dir, `${name}.json`),
        JSON.stringify({ ...keys, fingerprint: keyFingerprint(keys) }),
      );
      writeFileSync(join(dir, `${name}.secret.json`), JSON.stringify(own));
      return { name, keys };
    });
    const before = await app.deps.db('room_trustees').count({ n: '*' }).first();
    const secret = await px([
      'room',
      'trustees',
      room.roomId,
      '--threshold',
      '2',
      '--trustee',
      `ana=${join(dir, 'ana.secret.json')}`,
    ]);
    expect(secret.code).toBe(2);
    expect(secret.stderr).toMatch(/is a trustee's own key file, holding its secret/);
    expect(await app.deps.db('room_trustees').count({ n: '*' }).first()).toEqual(before);

    const named = await ok<{ threshold: number; trustees: Array<{ name: string; publicKey: string }> }>([
      'room',
      'trustees',
      room.roomId,
      '--threshold',
      '2',
      ...files.flatMap((f) => ['--trustee', `${f.name}=${join(dir, `${f.name}.json`)}`]),
    ]);
    expect(named.threshold).toBe(2);
    expect(named.trustees.map((t) => [t.name, t.publicKey])).toEqual(
      files.map((f) => [f.name, f.keys.publicKey]),
    );
    // Once per room; and an ended ceremony needs t dealings, which nobody has made yet.
    await refused(
      ['room', 'trustees', room.roomId, '--threshold', '1', '--trustee', `ana=${join(dir, 'ana.json')}`],
      409,
      'trustees_exist',
    );
    await refused(['room', 'trustees-end', room.roomId], 409, 'too_few_dealings');
  });

  it("someone else's room is refused as one that does not exist", async () => {
    await refused(['room', 'show', roomId], 404, 'not_found', otherKeys);
    await refused(['room', 'add-members', roomId, '--member', 'other-admin'], 404, 'not_found', otherKeys);
    expect(await ok(['room', 'show', roomId])).toMatchObject({ memberCount: 3 });
  });

  it('treasury: a request decided m of n, each decision signed over the terms the member was shown', async () => {
    await ok([
      'room',
      'committee',
      roomId,
      '--slug',
      'treasury',
      '--name',
      'Treasury',
      '--threshold',
      '2',
      ...['--member', 'alice', '--member', 'bob', '--member', 'carol'],
    ]);
    await ok([
      'treasury',
      'limit',
      '--room',
      roomId,
      '--asset',
      'USDC-SOL',
      '--period-seconds',
      '86400',
      '--limit',
      '5000000',
    ]);
    const request = await ok<{ requestId: string; requestHash: string }>([
      'treasury',
      'request',
      '--room',
      roomId,
      '--committee',
      'treasury',
      '--operation',
      'spend',
      '--asset',
      'USDC-SOL',
      '--amount',
      '1250000',
      '--recipient',
      await address('carol'),
      '--purpose',
      'Q3 audit fee',
    ]);
    const file = join(dir, 'request.json');
    writeFileSync(file, JSON.stringify(request));
    // Terms changed in the file the member reads: refused here, before anything is signed or sent.
    const changed = join(dir, 'changed.json');
    const body = JSON.parse(JSON.stringify(request)) as { terms: { amount: string } };
    body.terms.amount = '9';
    writeFileSync(changed, JSON.stringify(body));
    const r = await px(['treasury', 'decide', changed, '--wallet', 'alice', '--decision', 'approve']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('is not the hash of its terms');
    // Mallory is on no committee.
    await refused(
      ['treasury', 'decide', file, '--wallet', 'mallory', '--decision', 'approve'],
      403,
      'not_an_approver',
    );
    expect(await ok(['treasury', 'show', request.requestId])).toMatchObject({
      status: 'pending',
      approvals: 0,
    });

    await ok(['treasury', 'decide', file, '--wallet', 'alice', '--decision', 'approve']);
    await refused(
      ['treasury', 'decide', file, '--wallet', 'alice', '--decision', 'approve'],
      409,
      'already_decided',
    );
    const decided = await ok<{ status: string; proofId: string }>([
      'treasury',
      'decide',
      file,
      '--wallet',
      'bob',
      '--decision',
      'approve',
    ]);
    expect(decided).toMatchObject({ status: 'approved', approvals: 2 });
    expect(decided.proofId).toMatch(/^prf_/);
    // Another organization cannot read it.
    await refused(['treasury', 'show', request.requestId], 404, 'not_found', otherKeys);
  }, 120_000);

  it('auctions: sealed bids kept for their reveal, revealed, finalized to the highest bid', async () => {
    const auction = await ok<{ auctionId: string }>([
      'auction',
      'create',
      '--title',
      'Office lease',
      '--pricing',
      'second',
      '--asset',
      'USDC-SOL',
      '--room',
      roomId,
      '--bidding-seconds',
      '45',
      '--reveal-seconds',
      '15',
    ]);
    const id = auction.auctionId;
    await ok(['auction', 'bid', id, '--wallet', 'alice', '--amount', '100', '--deposit', 'dep-alice']);
    // Revealing before the bidding closes is refused.
    await refused(['auction', 'reveal', id, '--wallet', 'alice'], 409, 'reveal_not_open');
    await ok(['auction', 'bid', id, '--wallet', 'bob', '--amount', '150', '--deposit', 'dep-bob']);
    // Mallory is not in the room: refused, and no salt is kept for a bid that does not exist.
    await refused(
      ['auction', 'bid', id, '--wallet', 'mallory', '--amount', '999', '--deposit', 'dep-m'],
      403,
      'not_a_member',
    );
    // One bid per wallet: another amount is refused here; the same one again is the service's 409,
    // and the kept salt stays (the bid it reveals is the one recorded).
    const other = await px(['auction', 'bid', id, '--wallet', 'alice', '--amount', '120', '--deposit', 'd']);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('one bid per wallet');
    await refused(
      ['auction', 'bid', id, '--wallet', 'alice', '--amount', '100', '--deposit', 'dep-alice'],
      409,
      'already_bid',
    );
    const kept = JSON.parse(readFileSync(adminKeys, 'utf8')).bids[id] as Record<string, unknown>;
    expect(Object.keys(kept).sort()).toEqual([await address('alice'), await address('bob')].sort());
    // The key file keeps the salt; no output shows it.
    const show = await px(['auction', 'show', id]);
    for (const b of Object.values(kept) as Array<{ salt: string }>) expect(show.stdout).not.toContain(b.salt);

    // The 45 seconds of bidding pass.
    clock.advance(45_000);
    await ok(['auction', 'show', id, '--wait', 'reveal', '--timeout', '60']);
    await ok(['auction', 'reveal', id, '--wallet', 'alice']);
    await ok(['auction', 'reveal', id, '--wallet', 'bob']);
    const noBid = await px(['auction', 'reveal', id, '--wallet', 'carol']);
    expect(noBid.code).toBe(1);
    expect(noBid.stderr).toContain('keeps no bid of carol');
    // And the 15 of the reveal.
    clock.advance(15_000);
    const done = await ok<{ status: string; result: { winner: string; price: string } }>([
      'auction',
      'show',
      id,
      '--wait',
      'finalized',
      '--timeout',
      '60',
    ]);
    expect(done.result).toMatchObject({ winner: await address('bob'), price: '100' });
  }, 120_000);

  it('workflows: events with actor commitments and evidence hashes, an anonymous approval through px approve', async () => {
    const made = await px(['approve', 'identity', '--out', join(dir, 'approver.id.json')]);
    expect(made.code, made.stderr).toBe(0);
    await ok([
      'workflow',
      'approvers',
      '--template',
      'Vendor Onboarding',
      '--stage',
      'approval',
      '--identity',
      join(dir, 'approver.id.json'),
    ]);
    const wf = await ok<{ workflowId: string; proofId: string }>([
      'workflow',
      'prepare',
      '--template',
      'Vendor Onboarding',
    ]);
    const event = (...args: string[]) => ok(['workflow', 'event', wf.workflowId, ...args]);
    await event(
      '--stage',
      'application',
      '--action',
      'attach_evidence',
      '--actor',
      'vendor',
      '--evidence',
      'vendor application form',
    );
    await event('--stage', 'application', '--action', 'submit', '--actor', 'vendor');
    await event(
      '--stage',
      'due_diligence',
      '--action',
      'attach_evidence',
      '--actor',
      'analyst',
      '--evidence',
      'due diligence report',
    );
    await event('--stage', 'due_diligence', '--action', 'approve', '--actor', 'analyst');
    await event(
      '--stage',
      'security_review',
      '--action',
      'attach_evidence',
      '--actor',
      'security',
      '--evidence',
      'security questionnaire',
    );
    await event('--stage', 'security_review', '--action', 'approve', '--actor', 'security');
    // A bare approval where an approver set exists is refused; another organization cannot post at all.
    await refused(
      [
        'workflow',
        'event',
        wf.workflowId,
        '--stage',
        'approval',
        '--action',
        'approve',
        '--actor',
        'procurement',
      ],
      409,
      'approval_proof_required',
    );
    await refused(
      ['workflow', 'event', wf.workflowId, '--stage', 'approval', '--action', 'approve', '--actor', 'x'],
      404,
      'not_found',
      otherKeys,
    );
    const approved = await px([
      'approve',
      'approve',
      '--proof',
      wf.proofId,
      '--stage',
      'approval',
      '--identity',
      join(dir, 'approver.id.json'),
      '--artifacts',
      artifacts,
    ]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ workflowStatus: 'completed' });
    const status = await ok<{ workflow: { status: string } }>(['workflow', 'status', wf.proofId]);
    expect(status.workflow.status).toBe('completed');
  }, 180_000);

  it('says what is wrong with a command in one line and exits 2', async () => {
    const r = await spawned(['room', 'create']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('room create needs --name');
    const unknown = await spawned(['nothing']);
    expect(unknown.code).toBe(2);
    expect(existsSync(adminKeys)).toBe(true);
  });
});
