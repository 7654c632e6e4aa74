// `npm run demo:pay -- <job id> <job token> [--url URL] [--timeout SECONDS]`: pays a priced job from the
// demo payer of the local development chain that `npm start` runs (dev/stack/demo-pay.ts), waits
// until the job has run, and prints the receipt's address as its last line. With `--checkout`, pays a
// license checkout instead and prints the license issued. Development only: demo money.
import { parseArgs } from 'node:util';
import { DemoPayError, demoPay, demoPayCheckout } from './stack/demo-pay';
import { env, serviceUrl } from '../shared/platform/env';

const usage = `usage: npm run demo:pay -- <job id> <job token> [--url URL] [--timeout SECONDS]
       npm run demo:pay -- --checkout <checkout id> <client secret> [--url URL] [--timeout SECONDS]
  Pays the job's quote in the local development chain's demo stablecoin from the demo payer,
  submits the transaction, waits until the job succeeded and prints the receipt URL.
  With --checkout, pays a license checkout prepared with "asset": "USDC-ETH" the same way, waits
  until its license is issued and prints it (its key: the checkout's status, with the client secret).
  <job token> the accessToken createJob answered with (or the key that created the job)
  <client secret> the clientSecret (cs_…) the checkout's prepare answered
  --url      the service (default: PX_URL, else BASE_URL, else http://127.0.0.1:PORT)
  --timeout  how long to wait in all (default 120)`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      timeout: { type: 'string' },
      checkout: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || positionals.length !== 2) {
    (values.help ? process.stdout : process.stderr).write(`${usage}\n`);
    return values.help ? 0 : 2;
  }
  const timeout = Number(values.timeout ?? 120);
  if (!Number.isFinite(timeout) || timeout <= 0) {
    process.stderr.write(`demo:pay: --timeout takes a number of seconds\n`);
    return 2;
  }
  try {
    if (values.checkout) {
      const paid = await demoPayCheckout({
        checkoutId: positionals[0]!,
        clientSecret: positionals[1]!,
        serviceUrl: values.url ?? serviceUrl(),
        dataDir: env.DATA_DIR,
        timeoutMs: timeout * 1000,
        say: (line) => process.stdout.write(`${line}\n`),
      });
      process.stdout.write(
        `checkout ${paid.checkoutId} confirmed: license ${paid.licenseId} (${paid.tier}) until ${paid.expiresAt}\n`,
      );
      return 0;
    }
    const result = await demoPay({
      jobId: positionals[0]!,
      token: positionals[1]!,
      serviceUrl: values.url ?? serviceUrl(),
      dataDir: env.DATA_DIR,
      timeoutMs: timeout * 1000,
      say: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`job ${result.jobId} succeeded; receipt:\n${result.receiptUrl}\n`);
    return 0;
  } catch (err) {
    if (err instanceof DemoPayError) {
      process.stderr.write(`demo:pay: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}

process.exitCode = await main();
