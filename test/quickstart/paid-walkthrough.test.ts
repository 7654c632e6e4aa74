// The README's paid walkthrough, literally: `npm start` in this checkout with no chain configured (its
// own DATA_DIR, so a fresh local development chain; the test database and Redis prefix instead of the
// embedded Postgres, which test/quickstart/readme.test.ts covers), then the README's commands unedited
// but for the port: a priced job, `npm run demo:pay`, the job succeeded, the receipt verified offline.
// Then the payer who should be refused: the same job again, a job that does not exist, a job with a
// token that is not its own, a free job, and no development chain — each refused in one line, with no
// transfer sent.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createPublicClient, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoTokenBalance } from '../../dev/chain/token';
import { devnetChain, devnetPaths, readDevnetInfo } from '../../dev/stack/devnet';
import type { DevnetInfo } from '../../dev/stack/devnet';
import { verifyReceipt } from '../../shared/payments/receipts';
import type { Receipt } from '../../shared/payments/receipts';
import { freePort } from '../ports';
import { npmStart } from './npm-start';
import type { NpmStart } from './npm-start';

const repo = resolve('.');
const readme = readFileSync(join(repo, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2]! }));
const walkthrough = blocks.find((b) => b.lang === 'sh' && b.body.includes('npm run demo:pay -- "$JOB"'));
const licenseWalkthrough = blocks.find((b) => b.lang === 'sh' && b.body.includes('demo:pay -- --checkout'));

const dataDir = mkdtempSync(join(tmpdir(), 'px-paid-'));
let env: NodeJS.ProcessEnv;
let port: number;
let started: NpmStart | undefined;
let info: DevnetInfo;
let paidJob: string;
let paidToken: string;

/** What `npm run demo:pay -- <args>` runs (without npm's own start-up), with this stack's settings. */
function demoPay(args: string[], extra: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'dev/demo-pay.ts', ...args], {
    cwd: repo,
    env: { ...env, ...extra },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

async function payerNonce(): Promise<number> {
  const pub = createPublicClient({ chain: devnetChain(info.rpcUrl), transport: http(info.rpcUrl) });
  return pub.getTransactionCount({ address: info.payer });
}

beforeAll(async () => {
  // No chain configured: npm start runs its local development chain, on a free port.
  started = await npmStart(dataDir, { drop: [], env: { DEVNET_PORT: String(await freePort()) } });
  ({ env, port } = started);
  info = readDevnetInfo(dataDir)!;
}, 180_000);

afterAll(async () => {
  await started?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

describe('the README paid walkthrough, on the local development chain npm start runs', () => {
  it('npm start says it runs a local development chain of demo money', async () => {
    console.info(`npm start to running, with the development chain: ${started!.startedInMs} ms`);
    const said = started!
      .out()
      .split('\n')
      .filter((l) => l.startsWith('[start]'));
    expect(said).toContain(
      '[start] starting the local development chain (ganache; demo money, never used in production)',
    );
    expect(said.find((l) => l.startsWith('[start]   dev chain'))).toBe(
      `[start]   dev chain       ${info.rpcUrl}   (local development chain: demo money, never production)`,
    );
    expect(said.find((l) => l.startsWith('[start]   pay for a job'))).toBe(
      `[start]   pay for a job   npm run demo:pay -- <job id> <job token>   (demo payer key in ${join(dataDir, 'devnet', 'payer.key')})`,
    );
    expect(statSync(info.payerKeyFile).mode & 0o777).toBe(0o600);
    // Pricing offers the demo stablecoin on the chain, named as a demo token; WBTC is not on it.
    const pricing = (await (await fetch(`http://127.0.0.1:${port}/api/pricing`)).json()) as {
      assets: Array<{ id: string; enabled: boolean; network: string; name: string; reason?: string }>;
    };
    const asset = (id: string) => pricing.assets.find((a) => a.id === id)!;
    expect(asset('USDC-ETH')).toMatchObject({ enabled: true, network: 'eip155:1337' });
    expect(asset('USDC-ETH').name).toContain('demo token on the local development chain, not real money');
    expect(asset('WBTC-ETH')).toMatchObject({ enabled: false, reason: 'wrong_network' });
    expect(asset('USDC-SOL')).toMatchObject({ enabled: false, reason: 'no_treasury' });
    // What the refusals below run directly is what the npm scripts run.
    const { scripts } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts['demo:pay']).toBe('node --import tsx dev/demo-pay.ts');
    expect(scripts['receipt:verify']).toBe('node --import tsx cli/verify-receipt.ts');
  });

  it('runs as written: a priced job, paid with demo:pay, succeeded, its receipt verified offline', async () => {
    expect(walkthrough, 'the README has a paid walkthrough').toBeDefined();
    // Unedited, on a port other than the default: the block and demo:pay find the service through PORT.
    expect(port).not.toBe(3000);
    const script = walkthrough!.body;
    const before = await demoTokenBalance(info.rpcUrl, info.token.address, info.treasury);
    const out = execFileSync(
      'bash',
      ['--norc', '-euo', 'pipefail', '-c', `${script}\necho "JOB=$JOB TOKEN=$TOKEN"`],
      {
        cwd: repo,
        env,
        encoding: 'utf8',
        timeout: 120_000,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const printed = /^JOB=(job_[0-9a-z]{26}) TOKEN=(jt_[\w-]{43})$/m.exec(out)!;
    paidJob = printed[1]!;
    paidToken = printed[2]!;
    expect(out).toContain(`job ${paidJob} succeeded; receipt:`);
    expect(out).toMatch(/"status":"succeeded"/);
    expect(out).toMatch(/^valid: receipt rcpt_[0-9a-z]{26} signed by /m);

    // What it claims, checked apart: the receipt is the service's, for this job, of exactly the quoted
    // amount, which the treasury received on the development chain.
    // Without its token the job is not found, as one that does not exist.
    expect((await fetch(`http://127.0.0.1:${port}/api/jobs/${paidJob}`)).status).toBe(404);
    const job = (await (
      await fetch(`http://127.0.0.1:${port}/api/jobs/${paidJob}`, {
        headers: { authorization: `Bearer ${paidToken}` },
      })
    ).json()) as {
      job: { status: string; links: { receipt: string } };
      payment: { quotes: Array<{ asset: string; amount: string; network: string }> };
    };
    expect(job.job.status).toBe('succeeded');
    const { receipt } = (await (await fetch(job.job.links.receipt)).json()) as { receipt: Receipt };
    const health = (await (await fetch(`http://127.0.0.1:${port}/api/health`)).json()) as {
      signingKey: { publicKey: string };
    };
    expect(verifyReceipt(receipt, health.signingKey.publicKey)).toBe(true);
    const quote = job.payment.quotes.find((q) => q.network === 'eip155:1337')!;
    expect(receipt).toMatchObject({
      jobId: paidJob,
      asset: 'USDC-ETH',
      network: 'eip155:1337',
      amount: quote.amount,
      quotedAmount: quote.amount,
      payTo: info.treasury,
      settlement: 'exact',
    });
    expect(BigInt(quote.amount)).toBeGreaterThan(500_000n); // 50 cents plus this quote's own offset
    const after = await demoTokenBalance(info.rpcUrl, info.token.address, info.treasury);
    expect(after - before).toBe(BigInt(quote.amount));

    // A changed receipt does not verify with the same command.
    const forged = JSON.stringify({ receipt: { ...receipt, amount: '1' } });
    const verifier = ['--import', 'tsx', 'cli/verify-receipt.ts', '-', health.signingKey.publicKey];
    const check = spawnSync(process.execPath, verifier, {
      cwd: repo,
      env,
      input: forged,
      encoding: 'utf8',
    });
    expect(check.status).toBe(1);
    expect(check.stdout).toMatch(/^INVALID: /);
  }, 150_000);

  it("refuses a job already paid, one that does not exist, a token not the job's, and a free one, sending nothing", async () => {
    const nonce = await payerNonce();
    const again = demoPay([paidJob, paidToken]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(
      new RegExp(`^demo:pay: job ${paidJob} is already paid \\(it is succeeded\\); receipt: http`),
    );

    const notFound = (id: string) =>
      `demo:pay: job ${id} not found at http://127.0.0.1:${port} (or the token is not that job's: pass the accessToken its createJob answered)`;
    const missing = demoPay(['job_00000000000000000000000000', paidToken]);
    expect(missing.status).toBe(1);
    expect(missing.stderr.trim()).toBe(notFound('job_00000000000000000000000000'));

    const created = await fetch(`http://127.0.0.1:${port}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ service: 'attest.timestamp', input: { digest: 'ab'.repeat(32) } }),
    });
    const freeJob = (await created.json()) as { job: { id: string }; accessToken: string };
    const free = freeJob.job.id;
    // Another job's token opens nothing: the unpaid job is not found, and not paid.
    const wrongToken = demoPay([paidJob, freeJob.accessToken]);
    expect(wrongToken.status).toBe(1);
    expect(wrongToken.stderr.trim()).toBe(notFound(paidJob));
    const noToken = demoPay([paidJob]);
    expect(noToken.status).toBe(2);
    expect(noToken.stderr).toContain('usage: npm run demo:pay -- <job id> <job token>');
    const notPriced = demoPay([free, freeJob.accessToken]);
    expect(notPriced.status).toBe(1);
    expect(notPriced.stderr.trim()).toBe(
      `demo:pay: job ${free} is not priced (attest.timestamp is free): it runs without a payment`,
    );

    const notAnId = demoPay(['../../etc/passwd', paidToken]);
    expect(notAnId.status).toBe(1);
    expect(notAnId.stderr).toContain('is not a job id');

    expect(await payerNonce()).toBe(nonce); // no transaction was sent for any of them
    for (const run of [again, missing, wrongToken, noToken, notPriced, notAnId])
      expect(run.stderr).not.toMatch(/\n\s+at /);
  }, 120_000);

  it('buys a license as written: a checkout paid with demo:pay --checkout, its key kept in a file only', async () => {
    expect(licenseWalkthrough, 'the README has a license walkthrough').toBeDefined();
    const before = await demoTokenBalance(info.rpcUrl, info.token.address, info.treasury);
    const out = execFileSync(
      'bash',
      [
        '--norc',
        '-euo',
        'pipefail',
        '-c',
        `${licenseWalkthrough!.body}\necho "CHECKOUT=$CHECKOUT SECRET=$SECRET FILE=$LICENSE_KEY_FILE"`,
      ],
      { cwd: repo, env, encoding: 'utf8', timeout: 120_000, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const [, checkout, secret, file] = /^CHECKOUT=(chk_\w{26}) SECRET=(cs_\S+) FILE=(\S+)$/m.exec(out)!;
    expect(out).toMatch(
      new RegExp(`^checkout ${checkout} confirmed: license (lic_\\w{26}) \\(Starter\\) until `, 'm'),
    );
    expect(out).toMatch(/^confirmed Starter lic_\w{26}$/m);
    expect(out).toMatch(/"tier":"Starter"/);
    // The key went to its file (its owner's alone), never to the terminal.
    expect(statSync(file!).mode & 0o777).toBe(0o600);
    const key = readFileSync(file!, 'utf8');
    expect(key).toMatch(/^lk_/);
    expect(out).not.toContain(key);
    expect(out).not.toMatch(/lk_[A-Za-z0-9_-]{20}/);
    // The treasury received exactly the checkout's amount.
    const status = (await (
      await fetch(`http://127.0.0.1:${port}/api/v1/commercial/checkout/status?checkoutId=${checkout}`, {
        headers: { authorization: `Bearer ${secret}` },
      })
    ).json()) as { checkout: { status: string; payment: { amount: string } } };
    expect(status.checkout.status).toBe('confirmed');
    const after = await demoTokenBalance(info.rpcUrl, info.token.address, info.treasury);
    expect(after - before).toBe(BigInt(status.checkout.payment.amount));

    // Paid once: again it is refused, and a secret not its own finds no checkout; nothing is sent.
    const nonce = await payerNonce();
    const again = demoPay(['--checkout', checkout!, secret!]);
    expect(again.status).toBe(1);
    expect(again.stderr.trim()).toMatch(
      new RegExp(`^demo:pay: checkout ${checkout} is already paid: license lic_`),
    );
    const stranger = demoPay(['--checkout', checkout!, `cs_${'x'.repeat(43)}`]);
    expect(stranger.status).toBe(1);
    expect(stranger.stderr).toContain(`checkout ${checkout} not found`);
    expect(await payerNonce()).toBe(nonce);
    rmSync(join(file!, '..'), { recursive: true, force: true });
  }, 150_000);

  it('says there is no development chain when there is none, and never printed a key', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'px-paid-none-'));
    try {
      const none = demoPay([paidJob, paidToken], { DATA_DIR: elsewhere });
      expect(none.status).toBe(1);
      expect(none.stderr.trim()).toBe(
        `demo:pay: no local development chain here (nothing under ${elsewhere}/devnet): run npm start with no chain configured, then try again`,
      );
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }

    // Ctrl-C: every process, the chain included, stops gracefully, once.
    await started!.stop();
    expect(started!.out()).toContain('[start] stopped');
    const stops = started!
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; reason?: string })
      .filter((l) => l.msg === 'shutting down');
    expect(stops.map((l) => l.reason)).toEqual(['SIGTERM', 'SIGTERM', 'SIGTERM', 'SIGTERM']);

    const stopped = demoPay([paidJob, paidToken]);
    expect(stopped.status).toBe(1);
    expect(stopped.stderr.trim()).toBe(
      `demo:pay: no local development chain is running (nothing answers at ${info.rpcUrl}): start it with npm start`,
    );

    // The README block with nothing answering at PX_URL: it stops on the missing receipt, loudly, and
    // never goes on to verify "undefined".
    const dead = spawnSync('bash', ['--norc', '-c', walkthrough!.body], {
      cwd: repo,
      env: { ...env, PX_URL: `http://127.0.0.1:${port}` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(dead.status).not.toBe(0);
    expect(dead.stderr).toContain('no receipt: the job is not paid');
    expect(dead.stdout + dead.stderr).not.toContain('RECEIPT=undefined');
    expect(dead.stdout).not.toMatch(/^valid: /m);

    const paths = devnetPaths(dataDir);
    for (const file of [paths.payerKey, paths.treasuryKey]) {
      const key = readFileSync(file, 'utf8').trim().slice(2);
      expect(started!.out()).not.toContain(key);
    }
  }, 60_000);
});
