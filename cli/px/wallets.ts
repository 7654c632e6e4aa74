// `px wallet …`, `px trial claim`, `px license show`: the key file's wallets and the license a wallet's
// trial claim issued (its key kept in the key file, never printed).
import { newWallet, trialClaim } from '../client/crypto';
import type { Command } from './context';

export const walletCommands: Command[] = [
  {
    name: 'wallet new',
    usage:
      'wallet new NAME                       make a wallet; prints its address (the key stays in the key file)',
    run: ({ keys, needId, out }) => {
      const name = needId('a NAME');
      const wallet = newWallet();
      keys.addWallet(name, wallet);
      out({ name, address: wallet.address });
    },
  },
  {
    name: 'wallet address',
    usage: 'wallet address NAME | wallet list',
    run: ({ keys, needId, out }) => out(keys.wallet(needId('a NAME')).address),
  },
  {
    name: 'wallet list',
    run: ({ keys, noId, out }) => {
      noId();
      out(keys.walletNames().map((name) => ({ name, address: keys.wallet(name).address })));
    },
  },
  {
    name: 'trial claim',
    usage: `trial claim --wallet NAME --organization ORG --email EMAIL
                                        claim a 14-day TRIAL license; its key is kept in the key file`,
    run: async ({ keys, noId, need, px, call, out }) => {
      noId();
      const wallet = keys.wallet(need('wallet'));
      if (keys.license) throw new Error(`${keys.path} already holds license ${keys.license.id}`);
      const issued = await call(
        px().platform.POST('/api/v1/commercial/trial/challenge', { body: { wallet: wallet.address } }),
      );
      const prepared = await call(
        px().platform.POST('/api/v1/commercial/checkout/prepare', {
          body: {
            license: 'TRIAL',
            organization: need('organization'),
            email: need('email'),
            ...trialClaim(wallet, issued.challenge),
          },
        }),
      );
      const license = prepared.checkout.license;
      if (!license) throw new Error(`checkout ${prepared.checkout.id} issued no license`);
      keys.keepLicense({
        id: license.id,
        token: license.token,
        tier: license.tier,
        organization: license.organization,
        expiresAt: license.expiresAt,
      });
      out({
        licenseId: license.id,
        tier: license.tier,
        organization: license.organization,
        expiresAt: license.expiresAt,
        keptIn: keys.path,
      });
    },
  },
  {
    name: 'license show',
    usage: 'license show                          the kept license (never its key)',
    run: ({ keys, noId, out }) => {
      noId();
      const l = keys.license;
      if (!l) throw new Error(`${keys.path} holds no license (npm run px -- trial claim …)`);
      out({ licenseId: l.id, tier: l.tier, organization: l.organization, expiresAt: l.expiresAt });
    },
  },
];
