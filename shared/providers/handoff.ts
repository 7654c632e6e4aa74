// The private-payments hand-off: how the provider is named, the login challenge as the spec answers
// it, and the proxied calls to the provider.
import { endpointName } from '../chains/http';
import { operatorFetch } from '../platform/egress';
import type { EgressResponse } from '../platform/egress';
import type { Env } from '../platform/env';
import { env } from '../platform/env';
import { logger } from '../platform/log';

const round = (ms: number) => Math.round(ms * 10) / 10;

export type HandOffSettings = Pick<
  Env,
  | 'PAYMENTS_PROVIDER_URL'
  | 'PAYMENTS_PROVIDER_LABEL'
  | 'PAYMENTS_PROVIDER_MOCK'
  | 'PAYMENTS_PROVIDER_SLUG'
  | 'PROVIDER_TIMEOUT_MS'
>;

export const CHALLENGE_TITLE = 'proof-exchange private payments login';
export const MOCK_MARKER = '[MOCK]';

export const providerSource = (settings: HandOffSettings = env) =>
  settings.PAYMENTS_PROVIDER_LABEL ??
  (settings.PAYMENTS_PROVIDER_URL ? new URL(settings.PAYMENTS_PROVIDER_URL).host : 'unconfigured');

/** How public status answers name the provider: its configured label, never its address. */
export const providerLabel = (settings: HandOffSettings = env) =>
  settings.PAYMENTS_PROVIDER_LABEL ?? (settings.PAYMENTS_PROVIDER_URL ? 'payments-provider' : 'unconfigured');

export const challengeTitle = (settings: HandOffSettings = env) =>
  settings.PAYMENTS_PROVIDER_MOCK ? `${CHALLENGE_TITLE} ${MOCK_MARKER}` : CHALLENGE_TITLE;

/** The challenge response of the spec's Authentication 3, field for field, around an issued challenge. */
export function loginChallenge(
  issued: { challenge: string; wallet: string; ttlSeconds: number },
  apiOrigin: string,
  settings: HandOffSettings = env,
) {
  const paymentsUrl = settings.PAYMENTS_PROVIDER_URL!.replace(/\/$/, '');
  return {
    ok: true,
    source: providerSource(settings),
    challenge: { challenge: issued.challenge },
    next: {
      login:
        `POST ${paymentsUrl}/v1/spl/login with the wallet-signed challenge: JSON { "wallet": "<wallet>", ` +
        `"challenge": "<the challenge text above, unchanged>", "signature": "<base58 ed25519 signature of the ` +
        `challenge's UTF-8 bytes by the wallet>" }; the answer carries the access token. The challenge ` +
        `logs in once, within ${issued.ttlSeconds} s.`,
      privateBalance:
        `GET ${apiOrigin}/api/v1/${settings.PAYMENTS_PROVIDER_SLUG}/balances/${issued.wallet}?mint=<mint> ` +
        `with the header Authorization: Bearer <ACCESS_TOKEN> from the login answer.`,
    },
  };
}

export interface ProviderAnswer {
  status: number;
  body: unknown;
  latencyMs: number;
}

export class ProviderUnreachable extends Error {}

/** One GET to the provider with the timeout; the caller's bearer token is passed on, never logged. */
export async function providerGet(
  path: string,
  opts: { bearer?: string; settings?: HandOffSettings } = {},
): Promise<ProviderAnswer> {
  const settings = opts.settings ?? env;
  const base = settings.PAYMENTS_PROVIDER_URL!.replace(/\/$/, '');
  const start = performance.now();
  let res: EgressResponse;
  try {
    res = await operatorFetch(`${base}${path}`, {
      headers: {
        accept: 'application/json',
        ...(opts.bearer ? { authorization: `Bearer ${opts.bearer}` } : {}),
      },
      signal: AbortSignal.timeout(settings.PROVIDER_TIMEOUT_MS),
    });
  } catch (err) {
    // The answer is public (a 502 problem): it says what happened, not where.
    const e = err as Error & { cause?: { code?: string } };
    logger.debug({ endpoint: endpointName(base), err: e.message }, 'payments provider unreachable');
    const code = /^[A-Z][A-Z0-9_]{1,31}$/.test(e.cause?.code ?? '') ? ` (${e.cause!.code})` : '';
    throw new ProviderUnreachable(
      e.name === 'TimeoutError'
        ? `The payments provider did not answer within ${settings.PROVIDER_TIMEOUT_MS} ms.`
        : `The payments provider could not be reached${code}.`,
    );
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, body, latencyMs: round(performance.now() - start) };
}
