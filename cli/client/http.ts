// The service's routes, typed: openapi-fetch over the types openapi-typescript generated from the two
// documents the service serves (`npm run client:generate`).
import createClient from 'openapi-fetch';
import type { Client } from 'openapi-fetch';
import type { paths as ExchangePaths } from './exchange-api';
import type { paths as PlatformPaths } from './platform-api';

export type { ExchangePaths, PlatformPaths };

export interface PxClient {
  /** The exchange table (/openapi.json): the agent exchange. */
  exchange: Client<ExchangePaths>;
  /** Tables B and C (/openapi/platform.json): commercial, workflows, governance, treasury, auctions. */
  platform: Client<PlatformPaths>;
}

export interface PxClientOptions {
  /** The service's address (npm start prints it; PX_URL). */
  url: string;
  /** A Bearer credential: a license key (lk_…), the operator token, an agent key. */
  token?: string;
  fetch?: typeof fetch;
}

/** An RFC 9457 problem as the service answers it. */
export interface Problem {
  status?: number;
  code?: string;
  title?: string;
  detail?: string;
}

export function pxClient({ url, token, fetch: f }: PxClientOptions): PxClient {
  const options = {
    baseUrl: url.replace(/\/+$/, ''),
    headers: token ? { Authorization: `Bearer ${token}` } : undefined,
    ...(f ? { fetch: f } : {}),
  };
  return { exchange: createClient<ExchangePaths>(options), platform: createClient<PlatformPaths>(options) };
}

/** One line for a refusal: `refused (403 signature_invalid): The signature does not verify.` */
export function problemLine(status: number, error: unknown): string {
  const p = (error ?? {}) as Problem;
  if (typeof p !== 'object' || (!p.code && !p.detail)) return `refused (${status}): ${String(error)}`;
  return `refused (${status} ${p.code ?? 'error'}): ${p.detail ?? p.title ?? ''}`.trimEnd();
}
