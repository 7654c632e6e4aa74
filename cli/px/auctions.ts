// `px auction …`: sealed-bid auctions; a bid's amount and salt are kept in the key file for its reveal.
import { sealedBid } from '../client/crypto';
import { UsageError, int, sleep } from './context';
import type { Command } from './context';

/** Sealing an opening to the trustees brings their curve arithmetic: loaded by the bids that do. */
const sealing = () => import('../../shared/auctions/sealed-openings');

/** --reveal-by: bidders (the default) or the room's trustees. */
function revealBy(value: string | undefined): 'bidders' | 'trustees' | undefined {
  if (value !== undefined && value !== 'bidders' && value !== 'trustees')
    throw new UsageError('--reveal-by is bidders or trustees');
  return value;
}

export const auctionCommands: Command[] = [
  {
    name: 'auction create',
    usage: `auction create --title TEXT --pricing first|second --asset ASSET --bidding-seconds N --reveal-seconds N
                 [--room ROOM] [--reserve AMOUNT] [--unrevealed-deposit refunded|forfeited]
                 [--reveal-by trustees]   (bids sealed to the room's trustees, who open them all)`,
    run: async ({ values, noId, need, px, call, out }) => {
      noId();
      const pricing = need('pricing');
      if (pricing !== 'first' && pricing !== 'second') throw new UsageError('--pricing is first or second');
      const deposit = values['unrevealed-deposit'];
      if (deposit !== undefined && deposit !== 'refunded' && deposit !== 'forfeited')
        throw new UsageError('--unrevealed-deposit is refunded or forfeited');
      const bidding = Date.now() + int(need('bidding-seconds'), 'bidding-seconds')! * 1000;
      const reveal = bidding + int(need('reveal-seconds'), 'reveal-seconds')! * 1000;
      out(
        await call(
          px().platform.POST('/api/auctions', {
            body: {
              title: need('title'),
              pricing,
              asset: need('asset'),
              roomId: values.room,
              reserve: values.reserve,
              unrevealedDeposit: deposit,
              biddingEndsAt: new Date(bidding).toISOString(),
              revealEndsAt: new Date(reveal).toISOString(),
              revealBy: revealBy(values['reveal-by']),
            },
          }),
        ),
      );
    },
  },
  {
    name: 'auction show',
    usage: 'auction show AUCTION [--wait reveal|finalized]',
    run: async ({ values, needId, timeoutMs, px, call, out }) => {
      const auctionId = needId('an AUCTION');
      const order = ['bidding', 'reveal', 'finalized'];
      if (values.wait !== undefined && !order.slice(1).includes(values.wait))
        throw new UsageError('--wait is reveal or finalized');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const view = await call(
          px().platform.GET('/api/auctions/{auctionId}', { params: { path: { auctionId } } }),
        );
        if (values.wait === undefined || order.indexOf(view.status) >= order.indexOf(values.wait))
          return out(view);
        if (Date.now() > deadline) throw new Error(`${auctionId} is still ${view.status}`);
        await sleep(Math.min(1000, Math.max(100, view.timeRemainingSeconds * 1000)));
      }
    },
  },
  {
    name: 'auction bid',
    usage: `auction bid AUCTION --wallet NAME --amount AMOUNT --deposit REF
                                        a sealed bid; its amount and salt are kept for the reveal`,
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const auctionId = needId('an AUCTION');
      const wallet = keys.wallet(need('wallet'));
      const amount = need('amount');
      // A bid kept from an attempt whose answer never came is sent again as it was (same salt, same
      // commitment): a new salt would lose the reveal of the one the service may hold.
      const before = keys.keptBid(auctionId, wallet.address);
      if (before && before.amount !== amount)
        throw new Error(
          `${keys.path} keeps a bid of ${values.wallet} in ${auctionId} for ${before.amount}: one bid per wallet`,
        );
      const { bid, reveal } = sealedBid(wallet, auctionId, amount, need('deposit'), before?.salt);
      if (!before) keys.keepBid(auctionId, wallet.address, { amount: reveal.amount, salt: reveal.salt });
      // An auction revealed by the room's trustees takes the opening sealed to their joint key too.
      const view = await call(
        px().platform.GET('/api/auctions/{auctionId}', { params: { path: { auctionId } } }),
      );
      const sealedOpening = view.trustees
        ? (await sealing()).sealBidOpening(view.trustees.jointKey, auctionId, bid.commitment, reveal)
        : undefined;
      try {
        out(
          await call(
            px().platform.POST('/api/auctions/{auctionId}/bids', {
              params: { path: { auctionId } },
              body: { ...bid, ...(sealedOpening ? { sealedOpening } : {}) },
            }),
          ),
        );
      } catch (err) {
        // Refused: nothing was recorded, so nothing is kept for a reveal either (unless the refusal
        // says a bid is already there, or no answer came).
        const message = (err as Error).message;
        if (!before && message.startsWith('refused') && !message.includes(' already_bid)'))
          keys.dropBid(auctionId, wallet.address);
        throw err;
      }
    },
  },
  {
    name: 'auction reveal',
    usage: 'auction reveal AUCTION --wallet NAME',
    run: async ({ values, needId, need, keys, px, call, out }) => {
      const auctionId = needId('an AUCTION');
      const wallet = keys.wallet(need('wallet'));
      const kept = keys.keptBid(auctionId, wallet.address);
      if (!kept) throw new Error(`${keys.path} keeps no bid of ${values.wallet} in ${auctionId}`);
      out(
        await call(
          px().platform.POST('/api/auctions/{auctionId}/reveals', {
            params: { path: { auctionId } },
            body: { bidder: wallet.address, ...kept },
          }),
        ),
      );
    },
  },
  {
    name: 'auction finalize',
    usage: 'auction finalize AUCTION',
    run: async ({ needId, px, call, out }) =>
      out(
        await call(
          px().platform.POST('/api/auctions/{auctionId}/finalize', {
            params: { path: { auctionId: needId('an AUCTION') } },
          }),
        ),
      ),
  },
];
