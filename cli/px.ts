// `npm run px -- <command>`: one command line for every flow of the platform, over the typed client
// (cli/client/), with the crypto done here: wallets and their signatures, sealed bids, actor
// commitments and document hashes. Ballots and workflow approvals are the voter's and approver's own
// clients (`px ballot …` runs `npm run ballot -- …`, `px approve …` runs `npm run approve -- …`).
// Keys live in the key file (PX_KEYS, else ~/.proof-exchange/keys.json; mode 0600), never printed. The
// service is --url, else PX_URL, else BASE_URL, else this machine's PORT; the credential --token, else
// the license the key file holds, else OPERATOR_TOKEN. A refusal prints one line and exits 1.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { env, serviceUrl } from '../shared/platform/env';
import { printable, printableJson } from '../shared/platform/text';
import {
  actorCommitment,
  documentHash,
  identityRegistration,
  membershipProof,
  newWallet,
  proposalReview,
  sealedBid,
  treasuryDecision,
  trialClaim,
} from './client/crypto';
import type { Decision } from './client/crypto';
import { problemLine, pxClient } from './client/http';
import type { PxClient } from './client/http';
import { KeyFile, defaultKeyFile } from './keyfile';
import { readIdentityFile } from './member';
import { sealBidOpening } from '../shared/auctions/sealed-openings';

/** --reveal-by: bidders (the default) or the room's trustees. */
function revealBy(value: string | undefined): 'bidders' | 'trustees' | undefined {
  if (value !== undefined && value !== 'bidders' && value !== 'trustees')
    throw new UsageError('--reveal-by is bidders or trustees');
  return value;
}

export const usage = `usage: npm run px -- <command> [options]
  wallet new NAME                       make a wallet; prints its address (the key stays in the key file)
  wallet address NAME | wallet list
  trial claim --wallet NAME --organization ORG --email EMAIL
                                        claim a 14-day TRIAL license; its key is kept in the key file
  license show                          the kept license (never its key)
  room create --name NAME [--member W]...          W: a wallet name of the key file, or an address
  room show ROOM | room tree ROOM
  room add-members ROOM --member W...
  room committee ROOM --slug SLUG --name NAME --threshold M --member W...
  room prove ROOM --wallet NAME         prove membership (signs a fresh challenge)
  identity add ROOM (--identity FILE | --commitment C)...
  identity register ROOM --wallet NAME --identity FILE
                                        a member registers their own voter identity (npm run px -- ballot identity)
  proposal create --room ROOM --title TEXT --option O --option O... --committee SLUG
                  (--voting-seconds N | --voting-ends-at ISO) [--quorum N]
  proposal show PROPOSAL [--wait closed]  the public state; --wait closed: until the vote is closed
  proposal review PROPOSAL --wallet NAME --decision approve|reject
  proposal close PROPOSAL | proposal execute PROPOSAL --evidence TEXT
  ballot …                              npm run ballot -- … (identity, options, vote, make, submit)
  approve …                             npm run approve -- … (identity, prove, submit, approve)
  treasury limit --room ROOM --asset ASSET --period-seconds N --limit AMOUNT
  treasury request --room ROOM --committee SLUG --operation spend|mint|burn|transfer --asset ASSET
                   --amount AMOUNT --recipient TO --purpose TEXT
  treasury show REQUEST | treasury bundle REQUEST   the request; its package as a bundle for npm run verify
  treasury decide FILE --wallet NAME --decision approve|reject
                                        FILE: the request as created or shown; its hash is recomputed here
  auction create --title TEXT --pricing first|second --asset ASSET --bidding-seconds N --reveal-seconds N
                 [--room ROOM] [--reserve AMOUNT] [--unrevealed-deposit refunded|forfeited]
                 [--reveal-by trustees]   (bids sealed to the room's trustees, who open them all)
  auction show AUCTION [--wait reveal|finalized]
  auction bid AUCTION --wallet NAME --amount AMOUNT --deposit REF
                                        a sealed bid; its amount and salt are kept for the reveal
  auction reveal AUCTION --wallet NAME
  auction finalize AUCTION
  workflow prepare --template NAME
  workflow event WORKFLOW --stage KEY --action ACTION --actor NAME [--evidence TEXT | --evidence-file FILE]
  workflow approvers --template NAME --stage KEY (--identity FILE | --commitment C)...
  workflow status PROOF
Options: --keys FILE (else PX_KEYS), --url URL (else PX_URL), --token TOKEN, --field PATH (print that field
of the answer, e.g. --field roomId; several: on one line), --out FILE (write the whole answer there), --timeout SECONDS (for
--wait; default 600).`;

const HERE = dirname(fileURLToPath(import.meta.url));

class UsageError extends Error {}

/** `px ballot …` and `px approve …`: the member's own client, with the arguments as given. */
function delegate(script: string, args: string[]): Promise<number> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, script), ...args], {
      stdio: 'inherit',
    });
    child.once('close', (code) => done(code ?? 1));
  });
}

const options = {
  keys: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  field: { type: 'string', multiple: true },
  out: { type: 'string' },
  timeout: { type: 'string' },
  wallet: { type: 'string' },
  member: { type: 'string', multiple: true },
  name: { type: 'string' },
  slug: { type: 'string' },
  threshold: { type: 'string' },
  organization: { type: 'string' },
  email: { type: 'string' },
  identity: { type: 'string', multiple: true },
  commitment: { type: 'string', multiple: true },
  room: { type: 'string' },
  title: { type: 'string' },
  option: { type: 'string', multiple: true },
  committee: { type: 'string' },
  'voting-seconds': { type: 'string' },
  'voting-ends-at': { type: 'string' },
  quorum: { type: 'string' },
  wait: { type: 'string' },
  decision: { type: 'string' },
  evidence: { type: 'string' },
  'evidence-file': { type: 'string' },
  asset: { type: 'string' },
  'period-seconds': { type: 'string' },
  limit: { type: 'string' },
  operation: { type: 'string' },
  amount: { type: 'string' },
  recipient: { type: 'string' },
  purpose: { type: 'string' },
  pricing: { type: 'string' },
  reserve: { type: 'string' },
  'unrevealed-deposit': { type: 'string' },
  'reveal-by': { type: 'string' },
  'bidding-seconds': { type: 'string' },
  'reveal-seconds': { type: 'string' },
  deposit: { type: 'string' },
  template: { type: 'string' },
  stage: { type: 'string' },
  action: { type: 'string' },
  actor: { type: 'string' },
  help: { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/**
 * Prints the answer; with `fields`, only those (a string as is), several on one line separated by
 * spaces; with `out`, writes the whole answer there (and prints only the fields asked for).
 */
function print(value: unknown, fields: string[] | undefined, out: string | undefined): void {
  if (out) writeFileSync(out, `${JSON.stringify(value, null, 2)}\n`);
  // What the service stored reaches the terminal escaped (shared/platform/text.ts); the file keeps it.
  if (!fields?.length) {
    if (!out)
      process.stdout.write(
        typeof value === 'string' ? `${printable(value, { lines: true })}\n` : `${printableJson(value, 2)}\n`,
      );
    return;
  }
  const picked = fields.map((field) => {
    let v = value;
    for (const part of field.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
    if (v === undefined) throw new Error(`the answer has no ${field}`);
    return typeof v === 'string'
      ? printable(v, { lines: true })
      : printableJson(v, fields.length > 1 ? undefined : 2);
  });
  process.stdout.write(`${picked.join(' ')}\n`);
}

const int = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} is a whole number`);
  return Number(v);
};

const decisionOf = (v: string | undefined): Decision => {
  if (v !== 'approve' && v !== 'reject') throw new UsageError('--decision is approve or reject');
  return v;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function run(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const [group, verb, id, ...extra] = positionals;
  if (values.help || !group) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  if (extra.length) throw new UsageError(`unexpected ${extra.join(' ')}`);
  const keys = new KeyFile(values.keys ?? env.PX_KEYS ?? defaultKeyFile());
  const url = values.url ?? serviceUrl();
  let client: PxClient | undefined;
  const px = (): PxClient =>
    (client ??= pxClient({ url, token: values.token ?? keys.license?.token ?? env.OPERATOR_TOKEN }));

  const need = (name: keyof Values): string => {
    const v = values[name];
    if (typeof v !== 'string' || !v) throw new UsageError(`${group} ${verb ?? ''} needs --${name}`);
    return v;
  };
  const needId = (what: string): string => {
    if (!id) throw new UsageError(`${group} ${verb} needs ${what}`);
    return id;
  };
  const noId = () => {
    if (id) throw new UsageError(`unexpected ${id}`);
  };
  const out = (v: unknown) => print(v, values.field, values.out);
  const timeoutMs = (int(values.timeout, 'timeout') ?? 600) * 1000;

  /** The answer's data, or the refusal as one line. */
  async function call<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    let r: { data?: T; error?: unknown; response: Response };
    try {
      r = await p;
    } catch (err) {
      const c = (err as { cause?: { code?: string; message?: string } }).cause;
      const cause = c?.code ?? c?.message ?? (err as Error).message;
      throw new Error(`the service does not answer at ${url} (${cause})`);
    }
    if (!r.response.ok) throw new Error(problemLine(r.response.status, r.error));
    return r.data as T;
  }

  const commitments = async (): Promise<string[]> => {
    const fromFiles = await Promise.all(
      (values.identity ?? []).map(async (f) => (await readIdentityFile(f)).commitment),
    );
    const all = [...fromFiles, ...(values.commitment ?? [])];
    if (!all.length) throw new UsageError(`${group} ${verb} needs --identity FILE or --commitment C`);
    return all;
  };
  const members = (): string[] => (values.member ?? []).map((m) => keys.address(m));

  switch (`${group} ${verb ?? ''}`.trim()) {
    // --- Wallets and the license
    case 'wallet new': {
      const name = needId('a NAME');
      const wallet = newWallet();
      keys.addWallet(name, wallet);
      return out({ name, address: wallet.address });
    }
    case 'wallet address':
      return out(keys.wallet(needId('a NAME')).address);
    case 'wallet list':
      noId();
      return out(keys.walletNames().map((name) => ({ name, address: keys.wallet(name).address })));
    case 'trial claim': {
      noId();
      const wallet = keys.wallet(need('wallet'));
      if (keys.license) throw new Error(`${keys.path} already holds license ${keys.license.id}`);
      const issued = await call(
        px().platform.POST('/api/v1/commercial/trial/challenge', { body: { wallet: wallet.address } }),
      );
      const prepared = await call(
        px().platform.POST('/api/v1/commercial/checkout/prepare', {
          body: {
            license: 'TRIAL',
            organization: need('organization'),
            email: need('email'),
            ...trialClaim(wallet, issued.challenge),
          },
        }),
      );
      const license = prepared.checkout.license;
      if (!license) throw new Error(`checkout ${prepared.checkout.id} issued no license`);
      keys.keepLicense({
        id: license.id,
        token: license.token,
        tier: license.tier,
        organization: license.organization,
        expiresAt: license.expiresAt,
      });
      return out({
        licenseId: license.id,
        tier: license.tier,
        organization: license.organization,
        expiresAt: license.expiresAt,
        keptIn: keys.path,
      });
    }
    case 'license show': {
      noId();
      const l = keys.license;
      if (!l) throw new Error(`${keys.path} holds no license (npm run px -- trial claim …)`);
      return out({ licenseId: l.id, tier: l.tier, organization: l.organization, expiresAt: l.expiresAt });
    }

    // --- Rooms, committees, membership, identities
    case 'room create':
      noId();
      return out(
        await call(
          px().platform.POST('/api/governance/rooms', { body: { name: need('name'), members: members() } }),
        ),
      );
    case 'room show':
      return out(
        await call(
          px().platform.GET('/api/governance/rooms/{roomId}', {
            params: { path: { roomId: needId('a ROOM') } },
          }),
        ),
      );
    case 'room tree':
      return out(
        await call(
          px().platform.GET('/api/governance/rooms/{roomId}/tree', {
            params: { path: { roomId: needId('a ROOM') }, query: {} },
          }),
        ),
      );
    case 'room add-members':
      return out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/members', {
            params: { path: { roomId: needId('a ROOM') } },
            body: { members: members() },
          }),
        ),
      );
    case 'room committee':
      return out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/committees', {
            params: { path: { roomId: needId('a ROOM') } },
            body: {
              slug: need('slug'),
              name: need('name'),
              threshold: int(need('threshold'), 'threshold')!,
              members: members(),
            },
          }),
        ),
      );
    case 'room prove': {
      const roomId = needId('a ROOM');
      const wallet = keys.wallet(need('wallet'));
      const { challenge } = await call(
        px().platform.POST('/api/governance/rooms/{roomId}/challenge', { params: { path: { roomId } } }),
      );
      return out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/membership', {
            params: { path: { roomId } },
            body: membershipProof(wallet, challenge),
          }),
        ),
      );
    }
    case 'identity add':
      return out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/identities', {
            params: { path: { roomId: needId('a ROOM') } },
            body: { identityCommitments: await commitments() },
          }),
        ),
      );
    case 'identity register': {
      const roomId = needId('a ROOM');
      const files = values.identity ?? [];
      if (files.length !== 1) throw new UsageError('identity register needs one --identity FILE');
      const identity = await readIdentityFile(files[0]!);
      return out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/identities/register', {
            params: { path: { roomId } },
            body: identityRegistration(keys.wallet(need('wallet')), roomId, identity.commitment),
          }),
        ),
      );
    }

    // --- Proposals
    case 'proposal create':
      noId();
      return out(
        await call(
          px().platform.POST('/api/governance/proposals', {
            body: {
              roomId: need('room'),
              title: need('title'),
              options: values.option ?? [],
              reviewCommittee: need('committee'),
              quorum: int(values.quorum, 'quorum'),
              votingSeconds: int(values['voting-seconds'], 'voting-seconds'),
              votingEndsAt: values['voting-ends-at'],
            },
          }),
        ),
      );
    case 'proposal show': {
      const proposalId = needId('a PROPOSAL');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const state = await call(
          px().platform.GET('/api/governance/proposals/{proposalId}', { params: { path: { proposalId } } }),
        );
        const open = ['review', 'voting'].includes((state as { status: string }).status);
        if (values.wait !== undefined && values.wait !== 'closed') throw new UsageError('--wait is closed');
        if (values.wait === undefined || !open) return out(state);
        if (Date.now() > deadline)
          throw new Error(`${proposalId} is still ${(state as { status: string }).status}`);
        await sleep(1000);
      }
    }
    case 'proposal review': {
      const proposalId = needId('a PROPOSAL');
      return out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/review', {
            params: { path: { proposalId } },
            body: proposalReview(keys.wallet(need('wallet')), proposalId, decisionOf(values.decision)),
          }),
        ),
      );
    }
    case 'proposal close':
      return out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/close', {
            params: { path: { proposalId: needId('a PROPOSAL') } },
          }),
        ),
      );
    case 'proposal execute':
      return out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/execution', {
            params: { path: { proposalId: needId('a PROPOSAL') } },
            body: { evidenceHash: documentHash(need('evidence')) },
          }),
        ),
      );

    // --- Treasury
    case 'treasury limit':
      noId();
      return out(
        await call(
          px().platform.POST('/api/treasury/limits', {
            body: {
              roomId: need('room'),
              asset: need('asset'),
              periodSeconds: int(need('period-seconds'), 'period-seconds')!,
              limit: need('limit'),
            },
          }),
        ),
      );
    case 'treasury request': {
      noId();
      const operation = need('operation');
      if (!['spend', 'mint', 'burn', 'transfer'].includes(operation))
        throw new UsageError('--operation is spend, mint, burn or transfer');
      return out(
        await call(
          px().platform.POST('/api/treasury/requests', {
            body: {
              roomId: need('room'),
              committee: need('committee'),
              operation: operation as 'spend',
              asset: need('asset'),
              amount: need('amount'),
              recipient: need('recipient'),
              purposeHash: documentHash(need('purpose')),
            },
          }),
        ),
      );
    }
    case 'treasury show':
      return out(
        await call(
          px().platform.GET('/api/treasury/requests/{requestId}', {
            params: { path: { requestId: needId('a REQUEST') } },
          }),
        ),
      );
    case 'treasury bundle':
      return out(
        await call(
          px().platform.GET('/api/treasury/requests/{requestId}/bundle', {
            params: { path: { requestId: needId('a REQUEST') } },
          }),
        ),
      );
    case 'treasury decide': {
      const file = needId('the request FILE');
      const request = JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof treasuryDecision>[1];
      if (typeof request.requestId !== 'string' || typeof request.terms !== 'object')
        throw new Error(`${file} holds no treasury request (requestId and terms)`);
      return out(
        await call(
          px().platform.POST('/api/treasury/requests/{requestId}/approvals', {
            params: { path: { requestId: request.requestId } },
            body: treasuryDecision(keys.wallet(need('wallet')), request, decisionOf(values.decision)),
          }),
        ),
      );
    }

    // --- Auctions
    case 'auction create': {
      noId();
      const pricing = need('pricing');
      if (pricing !== 'first' && pricing !== 'second') throw new UsageError('--pricing is first or second');
      const deposit = values['unrevealed-deposit'];
      if (deposit !== undefined && deposit !== 'refunded' && deposit !== 'forfeited')
        throw new UsageError('--unrevealed-deposit is refunded or forfeited');
      const bidding = Date.now() + int(need('bidding-seconds'), 'bidding-seconds')! * 1000;
      const reveal = bidding + int(need('reveal-seconds'), 'reveal-seconds')! * 1000;
      return out(
        await call(
          px().platform.POST('/api/auctions', {
            body: {
              title: need('title'),
              pricing,
              asset: need('asset'),
              roomId: values.room,
              reserve: values.reserve,
              unrevealedDeposit: deposit,
              biddingEndsAt: new Date(bidding).toISOString(),
              revealEndsAt: new Date(reveal).toISOString(),
              revealBy: revealBy(values['reveal-by']),
            },
          }),
        ),
      );
    }
    case 'auction show': {
      const auctionId = needId('an AUCTION');
      const order = ['bidding', 'reveal', 'finalized'];
      if (values.wait !== undefined && !order.slice(1).includes(values.wait))
        throw new UsageError('--wait is reveal or finalized');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const view = await call(
          px().platform.GET('/api/auctions/{auctionId}', { params: { path: { auctionId } } }),
        );
        if (values.wait === undefined || order.indexOf(view.status) >= order.indexOf(values.wait))
          return out(view);
        if (Date.now() > deadline) throw new Error(`${auctionId} is still ${view.status}`);
        await sleep(Math.min(1000, Math.max(100, view.timeRemainingSeconds * 1000)));
      }
    }
    case 'auction bid': {
      const auctionId = needId('an AUCTION');
      const wallet = keys.wallet(need('wallet'));
      const amount = need('amount');
      // A bid kept from an attempt whose answer never came is sent again as it was (same salt, same
      // commitment): a new salt would lose the reveal of the one the service may hold.
      const before = keys.keptBid(auctionId, wallet.address);
      if (before && before.amount !== amount)
        throw new Error(
          `${keys.path} keeps a bid of ${values.wallet} in ${auctionId} for ${before.amount}: one bid per wallet`,
        );
      const { bid, reveal } = sealedBid(wallet, auctionId, amount, need('deposit'), before?.salt);
      if (!before) keys.keepBid(auctionId, wallet.address, { amount: reveal.amount, salt: reveal.salt });
      // An auction revealed by the room's trustees takes the opening sealed to their joint key too.
      const view = await call(
        px().platform.GET('/api/auctions/{auctionId}', { params: { path: { auctionId } } }),
      );
      const sealedOpening = view.trustees
        ? sealBidOpening(view.trustees.jointKey, auctionId, bid.commitment, reveal)
        : undefined;
      try {
        return out(
          await call(
            px().platform.POST('/api/auctions/{auctionId}/bids', {
              params: { path: { auctionId } },
              body: { ...bid, ...(sealedOpening ? { sealedOpening } : {}) },
            }),
          ),
        );
      } catch (err) {
        // Refused: nothing was recorded, so nothing is kept for a reveal either (unless the refusal
        // says a bid is already there, or no answer came).
        const message = (err as Error).message;
        if (!before && message.startsWith('refused') && !message.includes(' already_bid)'))
          keys.dropBid(auctionId, wallet.address);
        throw err;
      }
    }
    case 'auction reveal': {
      const auctionId = needId('an AUCTION');
      const wallet = keys.wallet(need('wallet'));
      const kept = keys.keptBid(auctionId, wallet.address);
      if (!kept) throw new Error(`${keys.path} keeps no bid of ${values.wallet} in ${auctionId}`);
      return out(
        await call(
          px().platform.POST('/api/auctions/{auctionId}/reveals', {
            params: { path: { auctionId } },
            body: { bidder: wallet.address, ...kept },
          }),
        ),
      );
    }
    case 'auction finalize':
      return out(
        await call(
          px().platform.POST('/api/auctions/{auctionId}/finalize', {
            params: { path: { auctionId: needId('an AUCTION') } },
          }),
        ),
      );

    // --- Workflows
    case 'workflow prepare':
      noId();
      return out(
        await call(
          px().platform.POST('/api/proof-workflows/prepare', { body: { template: need('template') } }),
        ),
      );
    case 'workflow event': {
      const workflowId = needId('a WORKFLOW');
      if (values.evidence !== undefined && values['evidence-file'] !== undefined)
        throw new UsageError('give --evidence or --evidence-file, not both');
      const evidence =
        values.evidence !== undefined
          ? documentHash(values.evidence)
          : values['evidence-file'] !== undefined
            ? documentHash(readFileSync(values['evidence-file']))
            : undefined;
      return out(
        await call(
          px().platform.POST('/api/proof-workflows/event', {
            body: {
              workflowId,
              stage: need('stage'),
              action: need('action') as 'submit',
              actorCommitment: actorCommitment(keys.actorSalt(), need('actor')),
              ...(evidence ? { evidenceHash: evidence } : {}),
            },
          }),
        ),
      );
    }
    case 'workflow approvers':
      noId();
      return out(
        await call(
          px().platform.POST('/api/proof-workflows/approver-sets', {
            body: {
              template: need('template'),
              stage: need('stage'),
              identityCommitments: await commitments(),
            },
          }),
        ),
      );
    case 'workflow status':
      return out(
        await call(
          px().platform.GET('/api/proof-workflows/status', {
            params: { query: { proofId: needId('a PROOF') } },
          }),
        ),
      );
    default:
      throw new UsageError(`unknown command: ${positionals.join(' ')}`);
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'ballot') return delegate('ballot.ts', argv.slice(1));
  if (argv[0] === 'approve') return delegate('approve.ts', argv.slice(1));
  try {
    await run(argv);
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const usageHint =
      err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(
      `${printable(message, { lines: true })}${usageHint ? '\n(npm run px -- --help)' : ''}\n`,
    );
    return usageHint ? 2 : 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await main(process.argv.slice(2));
