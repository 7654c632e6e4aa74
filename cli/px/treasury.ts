// `px treasury …`: a room's spending limits and its committee's requests, each member's decision signed
// over the terms read from the request as it was shown.
import { readFileSync } from 'node:fs';
import { documentHash, treasuryDecision } from '../client/crypto';
import { UsageError, decisionOf, int } from './context';
import type { Command } from './context';

export const treasuryCommands: Command[] = [
  {
    name: 'treasury limit',
    usage: 'treasury limit --room ROOM --asset ASSET --period-seconds N --limit AMOUNT',
    run: async ({ noId, need, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/treasury/limits', {
            body: {
              roomId: need('room'),
              asset: need('asset'),
              periodSeconds: int(need('period-seconds'), 'period-seconds')!,
              limit: need('limit'),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'treasury request',
    usage: `treasury request --room ROOM --committee SLUG --operation spend|mint|burn|transfer --asset ASSET
                   --amount AMOUNT --recipient TO --purpose TEXT`,
    run: async ({ noId, need, px, call, out }) => {
      noId();
      const operation = need('operation');
      if (!['spend', 'mint', 'burn', 'transfer'].includes(operation))
        throw new UsageError('--operation is spend, mint, burn or transfer');
      out(
        await call(
          px().platform.POST('/api/treasury/requests', {
            body: {
              roomId: need('room'),
              committee: need('committee'),
              operation: operation as 'spend',
              asset: need('asset'),
              amount: need('amount'),
              recipient: need('recipient'),
              purposeHash: documentHash(need('purpose')),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'treasury show',
    usage:
      'treasury show REQUEST | treasury bundle REQUEST   the request; its package as a bundle for npm run verify',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.GET('/api/treasury/requests/{requestId}', {
            params: { path: { requestId: needId('a REQUEST') } },
          }),
        ),
      ),
  },
  {
    name: 'treasury bundle',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.GET('/api/treasury/requests/{requestId}/bundle', {
            params: { path: { requestId: needId('a REQUEST') } },
          }),
        ),
      ),
  },
  {
    name: 'treasury decide',
    usage: `treasury decide FILE --wallet NAME --decision approve|reject
                                        FILE: the request as created or shown; its hash is recomputed here`,
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const file = needId('the request FILE');
      const request = JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof treasuryDecision>[1];
      if (typeof request.requestId !== 'string' || typeof request.terms !== 'object')
        throw new Error(`${file} holds no treasury request (requestId and terms)`);
      out(
        await call(
          px().platform.POST('/api/treasury/requests/{requestId}/approvals', {
            params: { path: { requestId: request.requestId } },
            body: treasuryDecision(keys.wallet(need('wallet')), request, decisionOf(values.decision)),
          }),
        ),
      );
    },
  },
];
