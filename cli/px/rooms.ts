// `px room …` and `px identity …`: rooms, their committees, membership proven by a wallet's signature,
// and the voter identities of a room's tree.
import { identityRegistration, membershipProof } from '../client/crypto';
import { UsageError, int, memberFiles } from './context';
import type { Command } from './context';

export const roomCommands: Command[] = [
  {
    name: 'room create',
    usage: 'room create --name NAME [--member W]...          W: a wallet name of the key file, or an address',
    run: async ({ noId, need, members, px, call, out }) => {
      noId();
      out(
        await call(
          px().platform.POST('/api/governance/rooms', { body: { name: need('name'), members: members() } }),
        ),
      );
    },
  },
  {
    name: 'room show',
    usage: 'room show ROOM | room tree ROOM',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.GET('/api/governance/rooms/{roomId}', {
            params: { path: { roomId: needId('a ROOM') } },
          }),
        ),
      ),
  },
  {
    name: 'room tree',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.GET('/api/governance/rooms/{roomId}/tree', {
            params: { path: { roomId: needId('a ROOM') }, query: {} },
          }),
        ),
      ),
  },
  {
    name: 'room add-members',
    usage: 'room add-members ROOM --member W...',
    run: async ({ needId, members, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/members', {
            params: { path: { roomId: needId('a ROOM') } },
            body: { members: members() },
          }),
        ),
      ),
  },
  {
    name: 'room committee',
    usage: 'room committee ROOM --slug SLUG --name NAME --threshold M --member W...',
    run: async ({ needId, need, members, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/committees', {
            params: { path: { roomId: needId('a ROOM') } },
            body: {
              slug: need('slug'),
              name: need('name'),
              threshold: int(need('threshold'), 'threshold')!,
              members: members(),
            },
          }),
        ),
      ),
  },
  {
    name: 'room prove',
    usage: 'room prove ROOM --wallet NAME         prove membership (signs a fresh challenge)',
    run: async ({ needId, need, keys, px, call, out }) => {
      const roomId = needId('a ROOM');
      const wallet = keys.wallet(need('wallet'));
      const { challenge } = await call(
        px().platform.POST('/api/governance/rooms/{roomId}/challenge', { params: { path: { roomId } } }),
      );
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/membership', {
            params: { path: { roomId } },
            body: membershipProof(wallet, challenge),
          }),
        ),
      );
    },
  },
  {
    name: 'identity add',
    usage: 'identity add ROOM (--identity FILE | --commitment C)...',
    run: async ({ needId, commitments, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/identities', {
            params: { path: { roomId: needId('a ROOM') } },
            body: { identityCommitments: await commitments() },
          }),
        ),
      ),
  },
  {
    name: 'identity register',
    usage: `identity register ROOM --wallet NAME --identity FILE
                                        a member registers their own voter identity (npm run px -- ballot identity)`,
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const roomId = needId('a ROOM');
      const files = values.identity ?? [];
      if (files.length !== 1) throw new UsageError('identity register needs one --identity FILE');
      const identity = await (await memberFiles()).readIdentityFile(files[0]!);
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/identities/register', {
            params: { path: { roomId } },
            body: identityRegistration(keys.wallet(need('wallet')), roomId, identity.commitment),
          }),
        ),
      );
    },
  },
];
