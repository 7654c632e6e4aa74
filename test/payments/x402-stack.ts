// The service as the x402 suites run it: the app on a loopback port with a jobs worker and a payments
// worker. Import it only after process.env names the chain: the modules read their settings once.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import { createApp } from '../../api/app';
import { testPaymentsWorker } from '../exchange/paid';
import { testApp, testJobsWorker } from '../helpers';
import type { TestApp, TestWorker } from '../helpers';

export interface PaidStack {
  /** The app's dependencies and supertest handle (set in beforeAll). */
  readonly app: TestApp;
  /** http://127.0.0.1:<port> of the listening app. */
  readonly base: string;
}

/** Starts the stack before the suite's tests and stops it after them, then runs `stopAlso` (the chain, a facilitator). */
export function paidStack(stopAlso: () => Promise<void>): PaidStack {
  let app: TestApp | undefined;
  let server: Server | undefined;
  let base = '';
  let jobsWorker: TestWorker | undefined;
  let payments: TestWorker | undefined;
  beforeAll(async () => {
    app = testApp();
    server = createApp(app.deps).listen(0, '127.0.0.1');
    await new Promise<void>((r) => server!.once('listening', () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    jobsWorker = testJobsWorker();
    payments = await testPaymentsWorker(app);
  });
  afterAll(async () => {
    await payments?.close();
    await jobsWorker?.close();
    await new Promise((r) => server?.close(r));
    await app?.close();
    await stopAlso();
  });
  return {
    get app() {
      if (!app) throw new Error('the paid stack starts in beforeAll');
      return app;
    },
    get base() {
      return base;
    },
  };
}
