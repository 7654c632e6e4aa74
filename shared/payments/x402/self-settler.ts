// The service as its own x402 facilitator: @x402/evm's `exact` scheme run in process, broadcasting
// over EVM_RPC_URL with the service's gas account. Loaded on first use (settle.ts): viem and @x402/evm
// are the largest libraries the service has, and a process that never settles this way never loads them.
import { AsyncLocalStorage } from 'node:async_hooks';
import { x402Facilitator } from '@x402/core/facilitator';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { concatHex, createPublicClient, encodeFunctionData, http, keccak256 } from 'viem';
import type { Abi, Hex, PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { operatorFetch } from '../../platform/egress';
import { SettlerUnavailable, cachedNetworks, exactEvmNetworks } from './settler';
import type { BeforeBroadcast, X402Settler } from './settler';

/**
 * The service as its own facilitator: @x402/evm's `exact` scheme with a signer whose transactions are
 * signed here, so each one's hash is known, and recorded, before it is broadcast. Transactions of one
 * process go out one at a time (one account, one nonce sequence).
 */
export function ownGasSettler(privateKey: Hex, rpcUrl: string, timeoutMs: number): X402Settler {
  const account = privateKeyToAccount(privateKey);
  const transport = http(rpcUrl, {
    fetchFn: operatorFetch as unknown as typeof fetch,
    timeout: timeoutMs,
    retryCount: 0,
  });
  const client: PublicClient = createPublicClient({ transport, pollingInterval: 250 });
  const hook = new AsyncLocalStorage<BeforeBroadcast | undefined>();
  let sending: Promise<unknown> = Promise.resolve();
  let chainId: number | undefined;

  async function send(tx: { to: Hex; data: Hex; gas?: bigint | undefined }): Promise<Hex> {
    const run = sending.then(async () => {
      chainId ??= await client.getChainId();
      const [nonce, fees, gas] = await Promise.all([
        client.getTransactionCount({ address: account.address, blockTag: 'pending' }),
        client.estimateFeesPerGas(),
        tx.gas ?? client.estimateGas({ account: account.address, to: tx.to, data: tx.data }),
      ]);
      const serialized = await account.signTransaction({
        type: 'eip1559',
        chainId,
        nonce,
        to: tx.to,
        data: tx.data,
        gas,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      });
      const hash = keccak256(serialized);
      await hook.getStore()?.(hash);
      await client.sendRawTransaction({ serializedTransaction: serialized });
      return hash;
    });
    sending = run.catch(() => undefined);
    return run;
  }

  const scheme = new ExactEvmScheme({
    getAddresses: () => [account.address],
    readContract: (args) => client.readContract(args as Parameters<PublicClient['readContract']>[0]),
    verifyTypedData: (args) =>
      client.verifyTypedData(args as unknown as Parameters<PublicClient['verifyTypedData']>[0]),
    writeContract: (args) => {
      const data = encodeFunctionData({
        abi: args.abi as Abi,
        functionName: args.functionName,
        args: args.args,
      });
      return send({
        to: args.address,
        data: args.dataSuffix ? concatHex([data, args.dataSuffix]) : data,
        gas: args.gas,
      });
    },
    sendTransaction: (args) => send(args),
    waitForTransactionReceipt: async ({ hash, timeout }) => {
      const receipt = await client.waitForTransactionReceipt({ hash, timeout: timeout ?? timeoutMs });
      return { status: receipt.status, logs: receipt.logs };
    },
    getCode: ({ address }) => client.getCode({ address }),
  });
  let facilitator: x402Facilitator | undefined;
  const ready = async () => {
    if (facilitator) return facilitator;
    chainId ??= await client.getChainId();
    facilitator = new x402Facilitator().register(`eip155:${chainId}`, scheme);
    return facilitator;
  };
  const unavailable = (err: unknown): never => {
    throw new SettlerUnavailable(`The EVM node did not answer: ${(err as Error).message.split('\n')[0]}`);
  };
  return {
    kind: 'self',
    networks: cachedNetworks(async () => exactEvmNetworks((await ready()).getSupported())),
    verify: async (payload, requirements) => (await ready().catch(unavailable)).verify(payload, requirements),
    settle: async (payload, requirements, beforeBroadcast) => {
      const f = await ready().catch(unavailable);
      return hook.run(beforeBroadcast, () => f.settle(payload, requirements));
    },
  };
}
