// `px room …` and `px identity …`: rooms, their committees, membership proven by a wallet's signature,
// and the voter identities of a room's tree.
import { readFileSync } from 'node:fs';
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
    name: 'room trustees',
    usage:
      'room trustees ROOM --threshold T --trustee NAME=FILE...   FILE: what `npm run trustee -- keys` printed',
    run: async ({ needId, need, values, px, call, out }) => {
      const roomId = needId('a ROOM');
      const given = values.trustee ?? [];
      if (!given.length) throw new UsageError('--trustee NAME=FILE: one for each trustee');
      const trustees = given.map((t) => {
        const at = t.indexOf('=');
        if (at < 1) throw new UsageError(`--trustee ${t}: NAME=FILE`);
        const file = t.slice(at + 1);
        let keys: { publicKey?: unknown; encryptionKey?: unknown };
        try {
          keys = JSON.parse(readFileSync(file, 'utf8')) as typeof keys;
        } catch {
          throw new UsageError(`--trustee ${t}: ${file} is not the JSON \`npm run trustee -- keys\` printed`);
        }
        if ('secret' in keys)
          throw new UsageError(
            `--trustee ${t}: ${file} is a trustee's own key file, holding its secret: give what it printed`,
          );
        if (typeof keys.publicKey !== 'string' || typeof keys.encryptionKey !== 'string')
          throw new UsageError(`--trustee ${t}: ${file} has no publicKey and encryptionKey`);
        return { name: t.slice(0, at), publicKey: keys.publicKey, encryptionKey: keys.encryptionKey };
      });
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/trustees', {
            params: { path: { roomId } },
            body: { threshold: int(need('threshold'), 'threshold')!, trustees },
          }),
        ),
      );
    },
  },
  {
    name: 'room trustees-end',
    usage: 'room trustees-end ROOM          ends the key ceremony with the dealings that qualify',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/governance/rooms/{roomId}/trustees/end', {
            params: { path: { roomId: needId('a ROOM') } },
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
