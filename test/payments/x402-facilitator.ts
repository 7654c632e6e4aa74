// An x402 facilitator on loopback, built from the @x402 packages alone (x402Facilitator with @x402/evm's
// `exact` scheme and a viem wallet paying gas), speaking the HTTP interface facilitators serve:
// GET /supported, POST /verify, POST /settle. It counts what it was asked, and can be told to settle
// and then drop the connection (a settlement whose answer never arrives).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { createWalletClient, defineChain, http, publicActions } from 'viem';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

export interface TestFacilitator {
  url: string;
  address: Hex;
  calls: { supported: number; verify: number; settle: number };
  /** The next /settle settles on chain, then closes the socket without answering. */
  dropNextSettleAnswer(): void;
  close(): Promise<void>;
}

export async function startFacilitator(
  rpcUrl: string,
  chainId: number,
  gasKey: Hex,
): Promise<TestFacilitator> {
  const chain = defineChain({
    id: chainId,
    name: `ganache-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const account = privateKeyToAccount(gasKey);
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl), pollingInterval: 50 }).extend(
    publicActions,
  );
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => wallet.readContract(args as never),
    verifyTypedData: (args) => wallet.verifyTypedData(args as never),
    writeContract: (args) => wallet.writeContract(args as never),
    sendTransaction: (args) => wallet.sendTransaction(args),
    waitForTransactionReceipt: (args) => wallet.waitForTransactionReceipt(args),
    getCode: (args) => wallet.getCode(args),
  });
  const facilitator = new x402Facilitator().register(`eip155:${chainId}`, new ExactEvmScheme(signer));
  const calls = { supported: 0, verify: 0, settle: 0 };
  let dropNext = false;

  const server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    try {
      if (req.method === 'GET' && req.url === '/supported') {
        calls.supported++;
        return send(200, facilitator.getSupported());
      }
      let text = '';
      for await (const chunk of req) text += chunk;
      const body = JSON.parse(text || '{}');
      if (req.method === 'POST' && req.url === '/verify') {
        calls.verify++;
        return send(200, await facilitator.verify(body.paymentPayload, body.paymentRequirements));
      }
      if (req.method === 'POST' && req.url === '/settle') {
        calls.settle++;
        const result = await facilitator.settle(body.paymentPayload, body.paymentRequirements);
        if (dropNext) {
          dropNext = false;
          req.socket.destroy();
          return;
        }
        return send(200, result);
      }
      send(404, { error: 'not found' });
    } catch (err) {
      send(500, { error: (err as Error).message });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    address: account.address,
    calls,
    dropNextSettleAnswer: () => {
      dropNext = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
