// The local development chain of `npm start`: when it runs (never in production), what its process
// provisions and keeps across a restart, and what the other processes are told about it. The whole
// paid walkthrough, through `npm start`, is test/quickstart/paid-walkthrough.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPublicClient, erc20Abi, http } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEVNET_NETWORK,
  devnetChain,
  devnetChildEnv,
  devnetDecision,
  devnetPaths,
  readDevnetInfo,
} from '../../dev/stack/devnet';
import type { DevnetInfo } from '../../dev/stack/devnet';
import { DemoPayError, quoteToPay } from '../../dev/stack/demo-pay';
import type { JobStatusBody } from '../../dev/stack/demo-pay';
import { StartupFailure } from '../../shared/platform/failures';
import { Supervisor } from '../../dev/stack/supervisor';
import type { ConfigError } from '../../shared/platform/env';
import { parseEnv } from '../../shared/platform/env';
import { listAssets } from '../../shared/chains/assets';
import { developmentSwitchIssues } from '../../shared/platform/startup-checks';
import { freePort, freePorts } from '../ports';

const issues = (vars: Record<string, string>) => {
  try {
    parseEnv(vars);
    return [];
  } catch (err) {
    return (err as ConfigError).issues;
  }
};
const production = { BASE_URL: 'https://px.example' };

describe('when the development chain runs', () => {
  it('runs by default only when nothing at all is configured for payments', () => {
    expect(devnetDecision(parseEnv({}))).toEqual({ start: true });
    for (const configured of [
      { TREASURY_EVM: '0x392Bd071728c1BEbEE7c68cF9ef4DBAd19f51fe9' },
      { TREASURY_SOLANA: 'So11111111111111111111111111111111111111112' },
      { EVM_RPC_URL: 'https://rpc.example' },
      { BITCOIN_ESPLORA_URL: 'https://esplora.example' },
    ]) {
      expect(devnetDecision(parseEnv(configured))).toEqual({ start: false, reason: 'chain_configured' });
    }
    expect(devnetDecision(parseEnv({ DEVNET: 'off' }))).toEqual({ start: false, reason: 'off' });
    // Asked for beside a Solana treasury: the chain fills the EVM family only.
    expect(
      devnetDecision(
        parseEnv({ DEVNET: 'on', TREASURY_SOLANA: 'So11111111111111111111111111111111111111112' }),
      ),
    ).toEqual({ start: true });
  });

  it('never in production, by NODE_ENV or APP_ENV', () => {
    expect(devnetDecision(parseEnv({ NODE_ENV: 'production', ...production }))).toEqual({
      start: false,
      reason: 'production',
    });
    expect(devnetDecision(parseEnv({ APP_ENV: 'production', ...production }))).toEqual({
      start: false,
      reason: 'production',
    });
    // Asked for in production: refused at start, with every development switch.
    const refused = (vars: Record<string, string>) => developmentSwitchIssues(parseEnv(vars));
    expect(refused({ NODE_ENV: 'production', ...production, DEVNET: 'on' })).toEqual([
      'DEVNET=on is a development switch: the local development chain never runs in production; unset DEVNET',
    ]);
    expect(refused({ APP_ENV: 'production', ...production, DEVNET: 'on' })).toHaveLength(1);
    // A production process handed the chain's settings (EVM_DEVNET, as npm start gives them) refuses them.
    expect(refused({ NODE_ENV: 'production', ...production, EVM_DEVNET: 'true' })).toEqual([
      expect.stringMatching(/^EVM_DEVNET=true is a development switch: .*configure a real EVM_RPC_URL$/),
    ]);
    expect(refused({ APP_ENV: 'production', ...production, EVM_DEVNET: 'true' })).toHaveLength(1);
    expect(refused({ APP_ENV: 'staging', EVM_DEVNET: 'true' })).toEqual([]);
    // Asked for beside a configured EVM chain: which one is meant is not guessed.
    expect(issues({ DEVNET: 'on', EVM_RPC_URL: 'https://rpc.example' })[0]).toMatch(
      /^DEVNET: on, but an EVM chain/,
    );
  });

  it('a production web process given the chain stops at start with one line', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
      env: {
        ...process.env,
        VITEST: '',
        NODE_ENV: 'production',
        BASE_URL: 'https://px.example',
        EVM_DEVNET: 'true',
        EVM_RPC_URL: 'http://127.0.0.1:8545',
      },
      encoding: 'utf8',
      // A start on a loaded machine (tsx, the service's modules): the refusal comes after them.
      timeout: 90_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain('Refusing to start in production: EVM_DEVNET=true is a development switch');
    expect(run.stdout).not.toContain('web listening');
  }, 120_000);

  it('npm start in production refuses DEVNET=on before starting anything', async () => {
    const port = await freePort();
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
      env: { ...process.env, VITEST: '', APP_ENV: 'production', DEVNET: 'on', PORT: String(port) },
      encoding: 'utf8',
      timeout: 90_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain(
      'Refusing to start in production: DEVNET=on is a development switch: the local development chain never runs in production',
    );
    expect(run.stdout).not.toContain('[start]');
  }, 120_000);

  it('npm start in production with no chain runs none, and says priced services stay unavailable', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'px-devnet-prod-start-'));
    const devnetPort = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
      env: {
        ...process.env,
        VITEST: '',
        APP_ENV: 'production',
        BASE_URL: 'https://px.example',
        PORT: String(await freePorts(2)),
        DEVNET_PORT: String(devnetPort),
        DATA_DIR: dataDir,
      },
      detached: true,
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const deadline = Date.now() + 60_000;
      while (!out.includes('starting web, worker and prover') && child.exitCode === null) {
        if (Date.now() > deadline) throw new Error(`npm start said:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(out).toContain(
        '[start] payments: no chain configured, so priced services answer 503 payments_unavailable; set a treasury and its chain endpoint (the local development chain never runs in production)',
      );
      expect(out).not.toContain('starting the local development chain');
      expect(out).not.toContain('payments provider: stand-in'); // the other development stand-in, too
      expect(() => statSync(devnetPaths(dataDir).dir)).toThrow();
    } finally {
      // Ctrl-C, as a terminal sends it: the processes it started stop with it.
      process.kill(-child.pid!, 'SIGINT');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  it('its process refuses to run in production even when started by hand', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'px-devnet-prod-'));
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'dev/stack/devnet-main.ts'], {
        env: {
          ...process.env,
          VITEST: '',
          LOG_LEVEL: 'info',
          APP_ENV: 'production',
          BASE_URL: 'https://px.example',
          DATA_DIR: dataDir,
          DEVNET_PORT: String(await freePort()),
        },
        encoding: 'utf8',
        timeout: 30_000,
      });
      expect(run.status).toBe(1);
      expect(run.stdout).toContain('the local development chain never runs in production');
      expect(() => statSync(devnetPaths(dataDir).chain)).toThrow(); // nothing made
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('what the other processes are told', () => {
  const info: DevnetInfo = {
    label: 'local development chain',
    rpcUrl: 'http://127.0.0.1:8545',
    chainId: 1337,
    network: DEVNET_NETWORK,
    token: {
      address: '0xe78a0f7e598cc8b0bb87894b0f60dd2a88d6a8ab',
      name: 'USD Coin',
      symbol: 'USDC',
      decimals: 6,
    },
    treasury: '0x392Bd071728c1BEbEE7c68cF9ef4DBAd19f51fe9',
    payer: '0xE353e11FaaeFeA82ed0d6Dd69228bdC3DcF6F432',
    payerKeyFile: '/nowhere/payer.key',
  };

  it('the endpoint, the treasury, and the stablecoin moved onto the chain, labelled as demo money', () => {
    const vars = devnetChildEnv(info, undefined);
    expect(vars).toMatchObject({
      EVM_RPC_URL: info.rpcUrl,
      TREASURY_EVM: info.treasury,
      EVM_CONFIRMATIONS: '1',
      EVM_DEVNET: 'true',
    });
    expect(JSON.stringify(vars)).not.toMatch(/[0-9a-f]{64}/i); // no key of any kind
    const assets = listAssets(parseEnv(vars));
    const usdc = assets.find((a) => a.id === 'USDC-ETH')!;
    expect(usdc).toMatchObject({ network: 'eip155:1337', contract: info.token.address, decimals: 6 });
    expect(usdc.name).toBe('USD Coin (demo token on the local development chain, not real money)');
    expect(assets.find((a) => a.id === 'ETH')!.network).toBe('eip155:1337');
    // WBTC has no contract on the chain: it stays on Ethereum (and shows wrong_network).
    expect(assets.find((a) => a.id === 'WBTC-ETH')!.network).toBe('eip155:1');
  });

  it("keeps the operator's own ASSETS_JSON overrides, and refuses one that is not JSON", () => {
    const vars = devnetChildEnv(
      info,
      JSON.stringify({ 'USDC-SOL': { disabled: true }, ETH: { amountSpread: 5 } }),
    );
    const assets = listAssets(parseEnv(vars));
    expect(assets.find((a) => a.id === 'USDC-SOL')!.disabled).toBe(true);
    expect(assets.find((a) => a.id === 'ETH')!).toMatchObject({ amountSpread: 5, network: 'eip155:1337' });
    expect(() => devnetChildEnv(info, '{nope')).toThrow(StartupFailure);
  });
});

describe('the development chain process', () => {
  let dataDir: string;
  let port: number;
  let out = '';

  /** One run of the process as npm start runs it: started, provisioned, stopped with one SIGTERM. */
  async function run(): Promise<DevnetInfo> {
    const logFile = join(dataDir, `run-${Date.now()}.log`);
    const supervisor = new Supervisor();
    await supervisor.start([
      {
        name: 'devnet',
        command: process.execPath,
        args: ['--import', 'tsx', 'dev/stack/devnet-main.ts'],
        env: { ...process.env, LOG_LEVEL: 'info', DATA_DIR: dataDir, DEVNET_PORT: String(port) },
        logFile,
        ready: 'ipc',
        readyTimeoutMs: 60_000,
      },
    ]);
    const info = readDevnetInfo(dataDir)!;
    const state = await balances(info);
    await supervisor.stop();
    out += readFileSync(logFile, 'utf8');
    return { ...info, ...({ state } as object) };
  }

  async function balances(info: DevnetInfo) {
    const pub = createPublicClient({ chain: devnetChain(info.rpcUrl), transport: http(info.rpcUrl) });
    const tokens = await pub.readContract({
      address: info.token.address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [info.payer],
    });
    return { eth: await pub.getBalance({ address: info.payer }), tokens, block: await pub.getBlockNumber() };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'px-devnet-'));
    port = await freePort();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('deploys the stablecoin and funds the payer once, keeps both across a restart, and never prints a key', async () => {
    const first = (await run()) as DevnetInfo & { state: Awaited<ReturnType<typeof balances>> };
    expect(first.rpcUrl).toBe(`http://127.0.0.1:${port}`);
    expect(first.network).toBe('eip155:1337');
    // USDC's EIP-712 domain name and decimals, so x402 payers signing for USDC sign for it.
    expect(first.token).toMatchObject({ name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect(first.state.tokens).toBe(1000n * 10n ** 6n);
    expect(first.state.eth).toBe(10n * 10n ** 18n);

    const paths = devnetPaths(dataDir);
    for (const file of [paths.payerKey, paths.treasuryKey]) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
    }
    expect(statSync(paths.dir).mode & 0o077).toBe(0);

    const second = (await run()) as typeof first;
    // The same chain: the token, the payer, the treasury and their balances are still there.
    expect(second.token.address).toBe(first.token.address);
    expect(second.payer).toBe(first.payer);
    expect(second.treasury).toBe(first.treasury);
    expect(second.state).toEqual(first.state); // nothing minted or sent again

    // Labelled in its log; its keys in no log line and not in devnet.json.
    expect(out).toContain('local development chain (ganache)');
    expect(out).toContain('demo money, never used in production');
    const keys = [paths.payerKey, paths.treasuryKey].map((f) => readFileSync(f, 'utf8').trim());
    for (const key of keys) {
      expect(key).toMatch(/^0x[0-9a-f]{64}$/);
      expect(out).not.toContain(key.slice(2));
      expect(readFileSync(paths.info, 'utf8')).not.toContain(key.slice(2));
    }
  }, 120_000);

  it('says so in one line when its port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const takenPort = (taken.address() as { port: number }).port;
    try {
      const supervisor = new Supervisor();
      const failure = await supervisor
        .start([
          {
            name: 'devnet',
            command: process.execPath,
            args: ['--import', 'tsx', 'dev/stack/devnet-main.ts'],
            env: { ...process.env, LOG_LEVEL: 'info', DATA_DIR: dataDir, DEVNET_PORT: String(takenPort) },
            logFile: join(dataDir, 'taken.log'),
            ready: 'ipc',
            readyTimeoutMs: 60_000,
          },
        ])
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      await supervisor.stop();
      expect(failure).toBeInstanceOf(StartupFailure);
      expect((failure as StartupFailure).what).toBe(`devnet: port ${takenPort} is already in use`);
      expect((failure as StartupFailure).fix).toContain('DEVNET_PORT');
    } finally {
      await new Promise((r) => taken.close(r));
    }
  }, 60_000);

  it('a devnet.json that is not one is no development chain', () => {
    const dir = mkdtempSync(join(tmpdir(), 'px-devnet-none-'));
    try {
      expect(readDevnetInfo(dir)).toBeUndefined();
      const paths = devnetPaths(dir);
      rmSync(paths.dir, { recursive: true, force: true });
      mkdirSync(paths.dir);
      writeFileSync(paths.info, '{"rpcUrl": 1');
      expect(readDevnetInfo(dir)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('which quote demo:pay pays', () => {
  const info: DevnetInfo = {
    label: 'local development chain',
    rpcUrl: 'http://127.0.0.1:8545',
    chainId: 1337,
    network: DEVNET_NETWORK,
    token: {
      address: '0xe78a0f7e598cc8b0bb87894b0f60dd2a88d6a8ab',
      name: 'USD Coin',
      symbol: 'USDC',
      decimals: 6,
    },
    treasury: '0x392Bd071728c1BEbEE7c68cF9ef4DBAd19f51fe9',
    payer: '0xE353e11FaaeFeA82ed0d6Dd69228bdC3DcF6F432',
    payerKeyFile: '/nowhere/payer.key',
  };
  const quote = (network: string, contract?: string) => ({
    reference: 'pay_01m8266zz3xv2b1f81jx48yfq2',
    asset: 'USDC-ETH',
    network,
    amount: '504431',
    amountDisplay: '0.504431',
    ...(contract ? { contract } : {}),
    payTo: '0x392Bd071728c1BEbEE7c68cF9ef4DBAd19f51fe9',
    expiresAt: '2026-11-22T18:07:39.395Z',
  });
  const state = (over: {
    status?: string;
    quotes?: ReturnType<typeof quote>[];
    watchUntil?: string;
  }): JobStatusBody => ({
    job: {
      id: 'job_01m8266zz57tc8mhwjh8y3scpc',
      service: 'attest.batch',
      status: over.status ?? 'awaiting_payment',
      price: { usdCents: 50 },
      error: null,
      links: {},
    },
    payment: {
      required: true,
      watchUntil: over.watchUntil ?? '2999-01-01T00:00:00Z',
      quotes: over.quotes ?? [
        quote('eip155:1', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'),
        quote(DEVNET_NETWORK, info.token.address.toUpperCase().replace('0X', '0x')),
      ],
      payments: [],
      links: {},
    },
  });
  const refusal = (s: JobStatusBody) => {
    try {
      quoteToPay(s, info);
      return undefined;
    } catch (err) {
      return err as DemoPayError;
    }
  };

  it("the one in the chain's token on the chain, whatever the address's case", () => {
    expect(quoteToPay(state({}), info).network).toBe(DEVNET_NETWORK);
  });

  it('none on mainnet or in another token: refused, naming what the job offers', () => {
    const err = refusal(
      state({
        quotes: [
          quote('eip155:1', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48'),
          quote(DEVNET_NETWORK, '0x0000000000000000000000000000000000000001'),
        ],
      }),
    );
    expect(err).toBeInstanceOf(DemoPayError);
    expect(err!.code).toBe('no_devnet_quote');
    expect(err!.message).toContain('its quotes: USDC-ETH on eip155:1, USDC-ETH on eip155:1337');
  });

  it('an expired job only while its quotes are still watched', () => {
    expect(quoteToPay(state({ status: 'expired' }), info).network).toBe(DEVNET_NETWORK);
    expect(refusal(state({ status: 'expired', watchUntil: '2000-01-01T00:00:00Z' }))!.code).toBe(
      'not_payable',
    );
    expect(refusal(state({ status: 'queued' }))!.code).toBe('already_paid');
  });
});
