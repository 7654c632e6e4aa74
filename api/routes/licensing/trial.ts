// The commercial table, the TRIAL's wallet challenge (/api/v1/commercial/trial/challenge): the text a wallet
// signs to claim a TRIAL license with checkout/prepare.
import { z } from 'zod';
import { issueTrialChallenge } from '../../../shared/licensing/trials';
import { env } from '../../../shared/platform/env';
import { walletPublicKeySchema } from '../../../shared/platform/wallet';
import type { RouteTable } from '../../http/route';

export function trialRoutes(table: RouteTable): RouteTable {
  const tags = ['Commercial'];
  return table.add({
    method: 'post',
    path: '/api/v1/commercial/trial/challenge',
    operationId: 'trialChallenge',
    summary: 'A challenge for a wallet to sign to claim a TRIAL license',
    description: `The text names the wallet, a random nonce, and when it was issued and expires (${env.TRIAL_CHALLENGE_TTL_SECONDS} s). Sign its UTF-8 bytes with the wallet (ed25519, as Solana wallets sign messages) and send wallet, challenge and signature with a TRIAL checkout/prepare. A challenge claims at most one trial.`,
    tags,
    // Each challenge is a row: a caller gets a few a minute, enough for any honest claim.
    budget: { name: 'trial-challenge', points: () => 30, what: 'trial challenges from this address' },
    body: z.strictObject({ wallet: walletPublicKeySchema }),
    responses: {
      201: {
        description: 'The challenge to sign',
        schema: z.object({
          wallet: z.string(),
          challenge: z.string(),
          nonce: z.string(),
          issuedAt: z.string(),
          expiresAt: z.string(),
        }),
      },
    },
    handler: async ({ body, deps }) => {
      const issued = await issueTrialChallenge(deps.db, body.wallet, {
        ttlSeconds: env.TRIAL_CHALLENGE_TTL_SECONDS,
      });
      return {
        status: 201,
        headers: { 'Cache-Control': 'no-store' },
        body: {
          wallet: body.wallet,
          challenge: issued.challenge,
          nonce: issued.nonce,
          issuedAt: issued.issuedAt.toISOString(),
          expiresAt: issued.expiresAt.toISOString(),
        },
      };
    },
  });
}
