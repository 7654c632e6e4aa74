// `npm run demo:pay -- <job id> <job token> [--url URL] [--timeout SECONDS]`: pays a priced job from the
// demo payer of the local development chain that `npm start` runs (dev/stack/demo-pay.ts), waits
// until the job has run, and prints the receipt's address as its last line. Development only: demo money.
import { parseArgs } from 'node:util';
import { DemoPayError, demoPay } from './stack/demo-pay';
import { env, serviceUrl } from '../shared/platform/env';

const usage = `usage: npm run demo:pay -- <job id> <job token> [--url URL] [--timeout SECONDS]
  Pays the job's quote in the local development chain's demo stablecoin from the demo payer,
  submits the transaction, waits until the job succeeded and prints the receipt URL.
  <job token> the accessToken createJob answered with (or the key that created the job)
  --url      the service (default: PX_URL, else BASE_URL, else http://127.0.0.1:PORT)
  --timeout  how long to wait in all (default 120)`;

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { url: { type: 'string' }, timeout: { type: 'string' }, help: { type: 'boolean' } },
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
