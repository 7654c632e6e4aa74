// `px proposal …`: a room's proposals, reviewed by its committee's wallets, voted on with the ballot
// client, closed and executed.
import { documentHash, proposalReview } from '../client/crypto';
import { UsageError, decisionOf, int, sleep } from './context';
import type { Command } from './context';

export const proposalCommands: Command[] = [
  {
    name: 'proposal create',
    usage: `proposal create --room ROOM --title TEXT --option O --option O... --committee SLUG
                  (--voting-seconds N | --voting-ends-at ISO) [--quorum N]`,
    run: async ({ values, noId, need, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/governance/proposals', {
            body: {
              roomId: need('room'),
              title: need('title'),
              options: values.option ?? [],
              reviewCommittee: need('committee'),
              quorum: int(values.quorum, 'quorum'),
              votingSeconds: int(values['voting-seconds'], 'voting-seconds'),
              votingEndsAt: values['voting-ends-at'],
            },
          }),
        ),
      );
    },
  },
  {
    name: 'proposal show',
    usage:
      'proposal show PROPOSAL [--wait closed]  the public state; --wait closed: until the vote is closed',
    run: async ({ values, needId, timeoutMs, px, call, out }) => {
      const proposalId = needId('a PROPOSAL');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const state = await call(
          px().platform.GET('/api/governance/proposals/{proposalId}', { params: { path: { proposalId } } }),
        );
        const open = ['review', 'voting'].includes((state as { status: string }).status);
        if (values.wait !== undefined && values.wait !== 'closed') throw new UsageError('--wait is closed');
        if (values.wait === undefined || !open) return out(state);
        if (Date.now() > deadline)
          throw new Error(`${proposalId} is still ${(state as { status: string }).status}`);
        await sleep(1000);
      }
    },
  },
  {
    name: 'proposal review',
    usage: 'proposal review PROPOSAL --wallet NAME --decision approve|reject',
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const proposalId = needId('a PROPOSAL');
      out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/review', {
            params: { path: { proposalId } },
            body: proposalReview(keys.wallet(need('wallet')), proposalId, decisionOf(values.decision)),
          }),
        ),
      );
    },
  },
  {
    name: 'proposal close',
    usage: 'proposal close PROPOSAL | proposal execute PROPOSAL --evidence TEXT',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/close', {
            params: { path: { proposalId: needId('a PROPOSAL') } },
          }),
        ),
      ),
  },
  {
    name: 'proposal execute',
    run: async ({ needId, need, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/proposals/{proposalId}/execution', {
            params: { path: { proposalId: needId('a PROPOSAL') } },
            body: { evidenceHash: documentHash(need('evidence')) },
          }),
        ),
      ),
  },
];
