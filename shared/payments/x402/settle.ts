// Who verifies and settles x402 `exact` payments: a configured facilitator (its /verify, /settle and
// /supported, called through the operator egress), or the service itself with its own gas account
// (the @x402/evm facilitator scheme run in process, broadcasting over EVM_RPC_URL). Either way the
// protocol is the @x402 packages'; this module only chooses, transports and caches.
import { ExternalFailure } from '../../platform/errors';
import { AsyncLocalStorage } from 'node:async_hooks';
import { x402Facilitator } from '@x402/core/facilitator';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { ExactEvmScheme } from '@x402/evm/exact/facilitator';
import { concatHex, createPublicClient, encodeFunctionData, http, keccak256 } from 'viem';
import type { Abi, Hex, PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { z } from 'zod';
import { operatorFetch } from '../../platform/egress';
import { env } from '../../platform/env';
import type { Env } from '../../platform/env';

export type X402Settings = Pick<
  Env,
  'X402_FACILITATOR_URL' | 'X402_FACILITATOR_TIMEOUT_MS' | 'X402_EVM_SETTLER_KEY' | 'EVM_RPC_URL'
>;

/** The settler could not be asked (down, timed out, answered nonsense): the outcome is unknown. */
export class SettlerUnavailable extends ExternalFailure {
  constructor(detail: string) {
    super(detail);
    this.name = 'SettlerUnavailable';
  }
}

/** Called with a settling transaction's hash before it is broadcast (where the settler knows it then). */
export type BeforeBroadcast = (txHash: Hex) => Promise<void>;

export interface X402Settler {
  readonly kind: 'facilitator' | 'self';
  /** CAIP-2 networks whose x402 v2 `exact` payments it settles now (cached). */
  networks(): Promise<ReadonlySet<string>>;
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  settle(
    payload: PaymentPayload,
    requirements: PaymentRequirements,
    beforeBroadcast?: BeforeBroadcast,
  ): Promise<SettleResponse>;
}

const SUPPORTED_TTL_MS = 5 * 60_000;
/** After a failed /supported, ask again this soon rather than after the full TTL. */
const SUPPORTED_RETRY_MS = 15_000;

const verifyResponseSchema = z.looseObject({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string().optional(),
});
const settleResponseSchema = z.looseObject({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  payer: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
});
const supportedResponseSchema = z.looseObject({
  kinds: z.array(
    z.looseObject({
      x402Version: z.number(),
      scheme: z.string(),
      network: z.string(),
      extra: z.record(z.string(), z.unknown()).optional(),
    }),
  ),
});

/** The networks of a /supported answer that take v2 `exact` on EVM (SVM needs a binding we cannot check). */
export function exactEvmNetworks(supported: {
  kinds: ReadonlyArray<{ x402Version: number; scheme: string; network: string }>;
}): Set<string> {
  return new Set(
    supported.kinds
      .filter((k) => k.x402Version === 2 && k.scheme === 'exact' && k.network.startsWith('eip155:'))
      .map((k) => k.network),
  );
}

/** True when `network` is in the set, directly or through a family wildcard (eip155:*). */
export function networkSupported(networks: ReadonlySet<string>, network: string): boolean {
  return networks.has(network) || networks.has(`${network.split(':')[0]}:*`);
}

function cachedNetworks(load: () => Promise<Set<string>>) {
  let value: Set<string> | undefined;
  let until = 0;
  let inflight: Promise<Set<string>> | undefined;
  return async (): Promise<ReadonlySet<string>> => {
    if (value && Date.now() < until) return value;
    inflight ??= load()
      .then((v) => {
        value = v;
        until = Date.now() + SUPPORTED_TTL_MS;
        return v;
      })
      .catch(() => {
        // Keep the last good answer a while; with none, x402 is off until the settler answers.
        until = Date.now() + SUPPORTED_RETRY_MS;
        value ??= new Set();
        return value;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}

/** A facilitator over HTTP, every call through the operator egress (no redirects followed). */
export function facilitatorSettler(url: string, timeoutMs: number): X402Settler {
  const base = url.replace(/\/+$/, '');
  async function call<T>(path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    let status: number;
    let text: string;
    try {
      const res = await operatorFetch(`${base}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      throw new SettlerUnavailable(`The x402 facilitator did not answer ${path}: ${(err as Error).message}`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new SettlerUnavailable(`The x402 facilitator answered ${path} with HTTP ${status}, not JSON.`);
    }
    // A refusal comes as 200 with isValid/success false, or as a 4xx carrying the same document.
    const parsed = schema.safeParse(doc);
    if (!parsed.success) {
      throw new SettlerUnavailable(
        `The x402 facilitator answered ${path} with HTTP ${status} and no result.`,
      );
    }
    return parsed.data;
  }
  const request = (payload: PaymentPayload, requirements: PaymentRequirements) => ({
    x402Version: payload.x402Version,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });
  return {
    kind: 'facilitator',
    networks: cachedNetworks(async () => exactEvmNetworks(await call('/supported', supportedResponseSchema))),
    verify: async (payload, requirements) =>
      (await call('/verify', verifyResponseSchema, request(payload, requirements))) as VerifyResponse,
    settle: async (payload, requirements) =>
      (await call('/settle', settleResponseSchema, request(payload, requirements))) as SettleResponse,
  };
}

/**
 * The service as its own facilitator: @x402/evm's `exact` scheme with a signer whose transactions are
 * signed here, so each one's hash is known, and recorded, before it is broadcast. Transactions of one
 * process go out one at a time (one account, one nonce sequence).
 */
export function selfSettler(privateKey: Hex, rpcUrl: string, timeoutMs: number): X402Settler {
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

let configured: { key: string; settler: X402Settler | undefined } | undefined;

/** The settler the configuration names (facilitator first, then the own gas key), or none. */
export function x402Settler(settings: X402Settings = env): X402Settler | undefined {
  const key = [
    settings.X402_FACILITATOR_URL ?? '',
    settings.X402_EVM_SETTLER_KEY ? keccak256(settings.X402_EVM_SETTLER_KEY as Hex) : '',
    settings.EVM_RPC_URL ?? '',
    settings.X402_FACILITATOR_TIMEOUT_MS,
  ].join('|');
  if (configured?.key === key) return configured.settler;
  let settler: X402Settler | undefined;
  if (settings.X402_FACILITATOR_URL)
    settler = facilitatorSettler(settings.X402_FACILITATOR_URL, settings.X402_FACILITATOR_TIMEOUT_MS);
  else if (settings.X402_EVM_SETTLER_KEY && settings.EVM_RPC_URL)
    settler = selfSettler(
      settings.X402_EVM_SETTLER_KEY as Hex,
      settings.EVM_RPC_URL,
      settings.X402_FACILITATOR_TIMEOUT_MS,
    );
  configured = { key, settler };
  return settler;
}

/** The networks x402 payments can be taken on now (empty when no settler is configured or answering). */
export async function x402Networks(settings: X402Settings = env): Promise<ReadonlySet<string>> {
  const settler = x402Settler(settings);
  return settler ? settler.networks() : new Set();
}
