// The `devnet` process of `npm start`: the local development chain (devnet.ts). A ganache node on
// 127.0.0.1:DEVNET_PORT with its database under DATA_DIR, provisioned (demo token, treasury, funded demo
// payer), then ready. It stops on SIGTERM, or by itself when its launcher is gone. Never in production.
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { env, isProduction } from '../../shared/platform/env';
import { runProcess } from '../../shared/platform/lifecycle';
import { logger } from '../../shared/platform/log';
import { Shutdown } from '../../shared/platform/shutdown';
import { DEVNET_CHAIN_ID, DEVNET_LABEL, devnetPaths, provisionDevnet } from './devnet';
import { StartupFailure, explainFileError, explainListenError } from '../../shared/platform/failures';

async function startDevnet(): Promise<{ shutdown: Shutdown }> {
  if (isProduction(env)) {
    throw new StartupFailure(
      `the ${DEVNET_LABEL} never runs in production`,
      'configure a real chain (EVM_RPC_URL, TREASURY_EVM)',
    );
  }
  const ganache = await import('ganache').then(
    (m) => m.default,
    () => {
      throw new StartupFailure(
        `the ${DEVNET_LABEL} needs the ganache package, which is not installed`,
        'run npm ci (development dependencies included), configure a chain (EVM_RPC_URL, TREASURY_EVM), or set DEVNET=off',
      );
    },
  );
  const paths = devnetPaths(env.DATA_DIR);
  try {
    mkdirSync(paths.chain, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw explainFileError(err) ?? err;
  }
  // ganache reports a database it cannot open (held by another node, damaged) as an uncaught error.
  let onUncaught: (err: Error) => void = () => undefined;
  const unopened = new Promise<never>((_, reject) => {
    onUncaught = (err) =>
      reject(
        new StartupFailure(
          `the ${DEVNET_LABEL} cannot open its database ${paths.chain} (${err.message.split('\n')[0]})`,
          `stop the other process using it, or delete that folder to start the chain afresh, or set DEVNET=off`,
        ),
      );
    process.once('uncaughtException', onUncaught);
  });
  // ganache's bundled typings resolve the options type to `undefined` under this tsconfig.
  const startServer = ganache.server as (options: object) => ReturnType<typeof ganache.server>;
  const server = startServer({
    logging: { quiet: true },
    chain: { chainId: DEVNET_CHAIN_ID },
    // One funding account from ganache's well-known development mnemonic: it deploys, mints and pays gas.
    wallet: { deterministic: true, totalAccounts: 1 },
    database: { dbPath: paths.chain },
  });
  const shutdown = new Shutdown();
  try {
    await Promise.race([server.listen(env.DEVNET_PORT, '127.0.0.1'), unopened]);
  } catch (err) {
    if (err instanceof StartupFailure) throw err;
    await server.close().catch(() => undefined);
    throw (
      explainListenError(err, { port: env.DEVNET_PORT, host: '127.0.0.1', variable: 'DEVNET_PORT' }) ??
      new StartupFailure(
        `the ${DEVNET_LABEL} could not start (${(err as Error).message})`,
        `delete ${paths.chain} to start the chain afresh, or set DEVNET=off`,
      )
    );
  }
  shutdown.register('devnet', () => server.close());
  const rpcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const info = await Promise.race([provisionDevnet({ dataDir: env.DATA_DIR, rpcUrl }), unopened]);
  process.off('uncaughtException', onUncaught);
  logger.info(
    {
      devnet: {
        rpcUrl,
        chainId: info.chainId,
        stablecoin: info.token.address,
        symbol: info.token.symbol,
        treasury: info.treasury,
        payer: info.payer,
      },
    },
    `${DEVNET_LABEL} (ganache) at ${rpcUrl}: demo money, never used in production`,
  );
  return { shutdown };
}

await runProcess('devnet', startDevnet);
