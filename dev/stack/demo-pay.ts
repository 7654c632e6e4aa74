// `npm run demo:pay -- <job id> <job token>`: pays a priced job the way an outside payer would, from the
// demo payer of the local development chain. The token (createJob's `accessToken`, or the key that
// created the job) opens the job: without it the service says the job was not found. It reads the
// job's quotes from the running service, picks the quote in
// the chain's demo stablecoin, sends exactly the quoted amount (the amount is what ties the transfer
// to this quote) to the quote's address, submits the transaction hash through submitPayment, and waits
// until the job has run. Development only: it pays with demo money from a key under DATA_DIR.
import { readFileSync } from 'node:fs';
import { createPublicClient, createWalletClient, erc20Abi, formatUnits, getAddress, http } from 'viem';
import type { Address, Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { idPattern } from '../../shared/platform/ids';
import { DEVNET_LABEL, devnetAnswers, devnetChain, readDevnetInfo } from './devnet';
import type { DevnetInfo } from './devnet';

/** A refusal said in one line the user can act on (the CLI prints it and exits non-zero). */
export class DemoPayError extends Error {
  constructor(
    readonly code:
      | 'bad_job_id'
      | 'bad_token'
      | 'no_devnet'
      | 'service_unreachable'
      | 'job_not_found'
      | 'not_priced'
      | 'already_paid'
      | 'not_payable'
      | 'no_devnet_quote'
      | 'insufficient_funds'
      | 'transfer_failed'
      | 'payment_refused'
      | 'payment_failed'
      | 'job_failed'
      | 'timeout',
    message: string,
  ) {
    super(message);
    this.name = 'DemoPayError';
  }
}

interface Quote {
  reference: string;
  asset: string;
  network: string;
  amount: string;
  amountDisplay: string;
  contract?: string;
  payTo: string;
  expiresAt: string;
}

interface PaymentView {
  id: string;
  txRef: string;
  status: string;
  reason: string | null;
  detail: string | null;
  links: Record<string, string>;
}

export interface JobStatusBody {
  job: {
    id: string;
    service: string;
    status: string;
    price: { usdCents: number };
    error: { code: string; message: string } | null;
    links: Record<string, string>;
  };
  payment?: {
    required: boolean;
    watchUntil: string;
    quotes: Quote[];
    payments: PaymentView[];
    links: Record<string, string>;
  };
}

export interface DemoPayOptions {
  jobId: string;
  /** What opens the job: its access token (jt_…), or the agent or license key that created it. */
  token: string;
  /** The service's base address (the exchange table). */
  serviceUrl: string;
  dataDir: string;
  /** How long to wait for the payment and the job, in all. */
  timeoutMs?: number;
  say?: (line: string) => void;
}

export interface DemoPayResult {
  jobId: string;
  txHash: Hex;
  paymentId: string;
  receiptUrl: string;
  status: 'succeeded';
}

const PAYMENT_FINAL_FAILURES = new Set(['rejected', 'underpaid', 'expired']);

async function call(
  serviceUrl: string,
  token: string,
  path: string,
  init?: RequestInit,
): Promise<{ status: number; body: Record<string, unknown> }> {
  let res: Response;
  try {
    res = await fetch(`${serviceUrl}${path}`, {
      ...init,
      headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(40_000),
    });
  } catch {
    throw new DemoPayError(
      'service_unreachable',
      `the service does not answer at ${serviceUrl}: is npm start running? (or pass --url)`,
    );
  }
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: said below by status
  }
  return { status: res.status, body };
}

async function readJob(
  serviceUrl: string,
  token: string,
  jobId: string,
  waitSeconds = 0,
): Promise<JobStatusBody> {
  const { status, body } = await call(
    serviceUrl,
    token,
    `/api/jobs/${jobId}${waitSeconds ? `?wait=${waitSeconds}` : ''}`,
  );
  // The service says the same for a job that does not exist and for a token that is not the job's.
  if (status === 404) {
    throw new DemoPayError(
      'job_not_found',
      `job ${jobId} not found at ${serviceUrl} (or the token is not that job's: pass the accessToken its createJob answered)`,
    );
  }
  if (status === 401) {
    throw new DemoPayError(
      'bad_token',
      `the service refused the token for job ${jobId}${body.detail ? `: ${String(body.detail)}` : ''}`,
    );
  }
  if (status !== 200) {
    throw new DemoPayError(
      'service_unreachable',
      `reading job ${jobId} answered ${status}${body.detail ? `: ${String(body.detail)}` : ''}`,
    );
  }
  return body as unknown as JobStatusBody;
}

/** Whether the job can take this payer's money at all, and the devnet quote to pay. */
export function quoteToPay(state: JobStatusBody, info: DevnetInfo, now = new Date()): Quote {
  const { job, payment } = state;
  if (job.price.usdCents === 0 || !payment) {
    throw new DemoPayError(
      'not_priced',
      `job ${job.id} is not priced (${job.service} is free): it runs without a payment`,
    );
  }
  const confirmed = payment.payments.find((p) => p.status === 'confirmed');
  if (confirmed || job.links.receipt || !['awaiting_payment', 'expired'].includes(job.status)) {
    const receipt = confirmed?.links.receipt ?? job.links.receipt;
    throw new DemoPayError(
      'already_paid',
      `job ${job.id} is already paid (it is ${job.status})${receipt ? `; receipt: ${receipt}` : ''}`,
    );
  }
  if (job.status === 'expired' && new Date(payment.watchUntil) <= now) {
    throw new DemoPayError(
      'not_payable',
      `job ${job.id} expired unpaid and its quotes are no longer watched; create a new job`,
    );
  }
  const token = info.token.address.toLowerCase();
  const quote = payment.quotes.find((q) => q.network === info.network && q.contract?.toLowerCase() === token);
  if (!quote) {
    const offered = payment.quotes.map((q) => `${q.asset} on ${q.network}`).join(', ') || 'none';
    throw new DemoPayError(
      'no_devnet_quote',
      `job ${job.id} has no quote in the ${DEVNET_LABEL}'s stablecoin ${info.token.symbol} (its quotes: ${offered}); it was priced while another chain was configured`,
    );
  }
  return quote;
}

/** The development chain of this checkout, answering; or why there is none. */
async function runningDevnet(dataDir: string): Promise<DevnetInfo> {
  const info = readDevnetInfo(dataDir);
  if (!info) {
    throw new DemoPayError(
      'no_devnet',
      `no ${DEVNET_LABEL} here (nothing under ${dataDir}/devnet): run npm start with no chain configured, then try again`,
    );
  }
  if (!(await devnetAnswers(info.rpcUrl, 2000))) {
    throw new DemoPayError(
      'no_devnet',
      `no ${DEVNET_LABEL} is running (nothing answers at ${info.rpcUrl}): start it with npm start`,
    );
  }
  return info;
}

/** Sends exactly `amount` of the demo stablecoin from the demo payer to `payTo`, mined; its hash. */
async function sendDemoTransfer(
  info: DevnetInfo,
  amount: bigint,
  payTo: string,
  amountDisplay: string,
  say: (line: string) => void,
): Promise<{ txHash: Hex; payer: Address }> {
  const account = privateKeyToAccount(readFileSync(info.payerKeyFile, 'utf8').trim() as Hex);
  const chain = devnetChain(info.rpcUrl);
  const transport = http(info.rpcUrl, { retryCount: 0, timeout: 30_000 });
  const pub = createPublicClient({ chain, transport });
  const wallet = createWalletClient({ chain, transport, account });
  const token = getAddress(info.token.address);
  const held = await pub.readContract({
    address: token,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [account.address],
  });
  if (held < amount) {
    throw new DemoPayError(
      'insufficient_funds',
      `the demo payer ${account.address} holds ${formatUnits(held, info.token.decimals)} ${info.token.symbol}, less than the ${amountDisplay} quoted; restart npm start to top it up`,
    );
  }
  const txHash = await wallet.writeContract({
    address: token,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [getAddress(payTo) as Address, amount],
  });
  const mined = await pub.waitForTransactionReceipt({ hash: txHash, timeout: 30_000 });
  if (mined.status !== 'success') {
    throw new DemoPayError('transfer_failed', `the transfer ${txHash} reverted on the ${DEVNET_LABEL}`);
  }
  say(`sent: transaction ${txHash} (block ${mined.blockNumber})`);
  return { txHash, payer: account.address };
}

export async function demoPay(opts: DemoPayOptions): Promise<DemoPayResult> {
  const say = opts.say ?? (() => undefined);
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const serviceUrl = opts.serviceUrl.replace(/\/+$/, '');
  if (!idPattern('job').test(opts.jobId)) {
    throw new DemoPayError('bad_job_id', `'${opts.jobId}' is not a job id (job_ and 26 characters)`);
  }
  if (!/^\S+$/.test(opts.token)) {
    throw new DemoPayError('bad_token', 'the job token is empty or has spaces in it');
  }
  const info = await runningDevnet(opts.dataDir);
  const state = await readJob(serviceUrl, opts.token, opts.jobId);
  const quote = quoteToPay(state, info);

  say(
    `paying job ${opts.jobId}: exactly ${quote.amountDisplay} ${info.token.symbol} (${quote.amount} base units, the quote's own amount) to ${quote.payTo} on the ${DEVNET_LABEL}`,
  );
  const { txHash, payer } = await sendDemoTransfer(
    info,
    BigInt(quote.amount),
    quote.payTo,
    quote.amountDisplay,
    say,
  );

  const submitted = await call(serviceUrl, opts.token, `/api/jobs/${opts.jobId}/payment`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `demo-pay-${txHash}` },
    body: JSON.stringify({
      asset: quote.asset,
      txRef: txHash,
      reference: quote.reference,
      payer,
    }),
  });
  if (submitted.status !== 202) {
    const b = submitted.body;
    throw new DemoPayError(
      'payment_refused',
      `the service refused the payment (${submitted.status} ${String(b.code ?? '')}): ${String(b.detail ?? 'no detail')}`,
    );
  }
  const paymentId = (submitted.body.payment as { id: string }).id;
  say(`submitted: payment ${paymentId}; waiting for the service to verify it on chain and run the job`);

  let said = '';
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new DemoPayError(
        'timeout',
        `job ${opts.jobId} did not finish in time (last: ${said || 'no change'}); see ${serviceUrl}/api/jobs/${opts.jobId}`,
      );
    }
    const now = await readJob(
      serviceUrl,
      opts.token,
      opts.jobId,
      Math.max(1, Math.min(10, Math.floor(left / 1000))),
    );
    const mine = now.payment?.payments.find((p) => p.id === paymentId);
    const line = `payment ${mine?.status ?? 'unknown'}, job ${now.job.status}`;
    if (line !== said) say(line);
    said = line;
    if (mine && PAYMENT_FINAL_FAILURES.has(mine.status)) {
      throw new DemoPayError(
        'payment_failed',
        `payment ${paymentId} was ${mine.status}${mine.reason ? ` (${mine.reason})` : ''}: ${mine.detail ?? ''}`.trim(),
      );
    }
    if (['failed', 'cancelled'].includes(now.job.status)) {
      throw new DemoPayError(
        'job_failed',
        `job ${opts.jobId} was paid but ${now.job.status}: ${now.job.error?.message ?? 'no reason given'}`,
      );
    }
    if (now.job.status === 'succeeded') {
      const receiptUrl = mine?.links.receipt ?? now.job.links.receipt;
      if (!receiptUrl)
        throw new DemoPayError('payment_failed', `job ${opts.jobId} succeeded without a receipt link`);
      return { jobId: opts.jobId, txHash, paymentId, receiptUrl, status: 'succeeded' };
    }
  }
}

export interface DemoPayCheckoutOptions {
  checkoutId: string;
  /** The checkout's client secret (cs_…), which prepare answered once. */
  clientSecret: string;
  serviceUrl: string;
  dataDir: string;
  timeoutMs?: number;
  say?: (line: string) => void;
}

interface CheckoutView {
  id: string;
  licenseType: string;
  organization: string;
  status: string;
  reason: string | null;
  detail: string | null;
  /** What to pay: a quote's fields. */
  payment: Pick<Quote, 'asset' | 'network' | 'amount' | 'amountDisplay' | 'contract' | 'payTo'> | null;
  license: { id: string; tier: string; expiresAt: string } | null;
}

const CHECKOUT_FINAL_FAILURES = new Set(['rejected', 'underpaid', 'expired']);

async function readCheckout(serviceUrl: string, secret: string, checkoutId: string): Promise<CheckoutView> {
  const { status, body } = await call(
    serviceUrl,
    secret,
    `/api/v1/commercial/checkout/status?checkoutId=${encodeURIComponent(checkoutId)}`,
  );
  // As for a job: one that does not exist and a secret that is not its own answer alike.
  if (status === 404)
    throw new DemoPayError(
      'job_not_found',
      `checkout ${checkoutId} not found at ${serviceUrl} (or the secret is not that checkout's: pass the clientSecret its prepare answered)`,
    );
  if (status !== 200)
    throw new DemoPayError(
      'service_unreachable',
      `reading checkout ${checkoutId} answered ${status}${body.detail ? `: ${String(body.detail)}` : ''}`,
    );
  return body.checkout as CheckoutView;
}

/**
 * `npm run demo:pay -- --checkout <checkout id> <client secret>`: pays a license checkout's amount in
 * the development chain's demo stablecoin, submits the transfer through the checkout's verify route and
 * waits until the license is issued. The license key is not printed: the checkout's status shows it to
 * the holder of the client secret.
 */
export async function demoPayCheckout(
  opts: DemoPayCheckoutOptions,
): Promise<{ checkoutId: string; txHash: Hex; licenseId: string; tier: string; expiresAt: string }> {
  const say = opts.say ?? (() => undefined);
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  const serviceUrl = opts.serviceUrl.replace(/\/+$/, '');
  if (!idPattern('chk').test(opts.checkoutId))
    throw new DemoPayError(
      'bad_job_id',
      `'${opts.checkoutId}' is not a checkout id (chk_ and 26 characters)`,
    );
  if (!/^cs_\S+$/.test(opts.clientSecret))
    throw new DemoPayError('bad_token', 'the client secret is the cs_… its prepare answered');
  const info = await runningDevnet(opts.dataDir);
  const checkout = await readCheckout(serviceUrl, opts.clientSecret, opts.checkoutId);
  if (checkout.license || checkout.status === 'confirmed')
    throw new DemoPayError(
      'already_paid',
      `checkout ${checkout.id} is already paid: license ${checkout.license?.id ?? '(being issued)'}`,
    );
  if (checkout.status !== 'awaiting_payment' || !checkout.payment)
    throw new DemoPayError(
      'not_payable',
      `checkout ${checkout.id} is ${checkout.status}${checkout.detail ? ` (${checkout.detail})` : ''}: it takes no payment now`,
    );
  const pay = checkout.payment;
  if (pay.network !== info.network || pay.contract?.toLowerCase() !== info.token.address.toLowerCase())
    throw new DemoPayError(
      'no_devnet_quote',
      `checkout ${checkout.id} is to be paid in ${pay.asset} on ${pay.network}, not the ${DEVNET_LABEL}'s ${info.token.symbol}: prepare it with "asset": "USDC-ETH" while npm start runs the chain`,
    );
  say(
    `paying checkout ${checkout.id} (${checkout.licenseType} for ${checkout.organization}): exactly ${pay.amountDisplay} ${info.token.symbol} (${pay.amount} base units) to ${pay.payTo} on the ${DEVNET_LABEL}`,
  );
  const { txHash } = await sendDemoTransfer(info, BigInt(pay.amount), pay.payTo, pay.amountDisplay, say);
  const submitted = await call(serviceUrl, opts.clientSecret, '/api/v1/commercial/checkout/verify', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `demo-pay-${txHash}` },
    body: JSON.stringify({ checkoutId: checkout.id, txRef: txHash }),
  });
  if (submitted.status !== 202)
    throw new DemoPayError(
      'payment_refused',
      `the service refused the payment (${submitted.status} ${String(submitted.body.code ?? '')}): ${String(submitted.body.detail ?? 'no detail')}`,
    );
  say(`submitted: waiting for the service to verify it on chain and issue the license`);
  let said = '';
  for (;;) {
    if (Date.now() > deadline)
      throw new DemoPayError(
        'timeout',
        `checkout ${checkout.id} was not confirmed in time (last: ${said || 'no change'})`,
      );
    const now = await readCheckout(serviceUrl, opts.clientSecret, checkout.id);
    if (now.status !== said) say(`checkout ${now.status}`);
    said = now.status;
    if (CHECKOUT_FINAL_FAILURES.has(now.status))
      throw new DemoPayError(
        'payment_failed',
        `checkout ${checkout.id} was ${now.status}${now.reason ? ` (${now.reason})` : ''}: ${now.detail ?? ''}`.trim(),
      );
    if (now.license)
      return {
        checkoutId: checkout.id,
        txHash,
        licenseId: now.license.id,
        tier: now.license.tier,
        expiresAt: now.license.expiresAt,
      };
    await new Promise((r) => setTimeout(r, 500));
  }
}
