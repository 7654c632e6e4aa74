// Sealed-bid auction rules, stated up front and applied by one pure function that the service and any
// verifier run alike: which bids count, who wins, what the winner pays, what happens to each deposit.
export type Pricing = 'first' | 'second';
export type DepositPolicy = 'refunded' | 'forfeited';

export interface AuctionTerms {
  pricing: Pricing;
  /** Base units; bids below it do not count. */
  reserve: string;
  biddingEndsAt: string;
  revealEndsAt: string;
  /** What happens to the deposit of a bid never revealed. */
  unrevealedDeposit: DepositPolicy;
  /** Set when each bid's opening is sealed to the room's trustees, who open them after the reveal window. */
  revealBy?: 'trustees' | undefined;
}

export interface BidRecord {
  commitment: string;
  /** Null in a package for every bid but the winner's: losing bidders appear as commitments only. */
  bidder: string | null;
  depositRef: string | null;
  committedAt: string;
  /**
   * A losing bid's reveal in a package keeps the amount and the bidder tag (enough to check the
   * commitment) and drops the salt, which with a guessed wallet would confirm the bidder.
   */
  reveal: { amount: string; salt: string | null; bidderTag?: string; revealedAt: string } | null;
}

export type BidStatus = 'valid' | 'unrevealed' | 'late' | 'below_reserve';
export type DepositOutcome = 'applied_to_price' | 'refunded' | 'forfeited';

export interface AuctionOutcome {
  winner: string | null;
  winningCommitment: string | null;
  price: string | null;
  reason: 'highest_bid' | 'tie_earliest_commit' | 'sole_bidder' | 'no_valid_bids';
  bids: Array<{ commitment: string; status: BidStatus; deposit: DepositOutcome }>;
  counts: { bids: number; valid: number; unrevealed: number; late: number; belowReserve: number };
}

/** The commitment and secrecy rules of auctions made before bidder tags (their packages still verify). */
const firstRules = {
  commitment:
    'Bid by committing sha256 of the canonical JSON array [amount, salt, bidder] (amount in base units as a decimal string, salt 32 random bytes hex, bidder your wallet address) with a deposit reference, signed by your wallet. One bid per wallet; a bid cannot be changed.',
  secrecy:
    'Until the reveal window ends nothing about bids is shown: no amounts, no leader, no bidders, not even how many bids there are.',
};

/** The rules as every bidder reads them in the auction's public view before bidding. */
export function statedRules(t: AuctionTerms, first = false): Record<string, string> {
  return {
    commitment:
      'Bid by committing sha256 of the canonical JSON array [amount, bidderTag], where bidderTag is sha256 of the canonical JSON array [salt, bidder] (amount in base units as a decimal string, salt 32 random bytes hex, bidder your wallet address), with a deposit reference, signed by your wallet. One bid per wallet; a bid cannot be changed.',
    secrecy:
      'Until the reveal window ends nothing about bids is shown: no amounts, no leader, no bidders, not even how many bids there are. Afterwards the package names the winner only: every other bid appears as its commitment, bidder tag, amount and fate, never its wallet or deposit reference.',
    reveal: `Reveal amount and salt after bidding ends (${t.biddingEndsAt}) and before ${t.revealEndsAt}.`,
    pricing:
      t.pricing === 'first'
        ? 'First price: the highest valid revealed bid wins and pays its own amount.'
        : 'Second price: the highest valid revealed bid wins and pays the second-highest valid revealed amount, or the reserve when that is higher.',
    reserve: `Bids below the reserve of ${t.reserve} base units do not count; their deposits are refunded.`,
    ties: 'Equal highest amounts: the bid committed first wins (then the lower commitment hash). Under second price the winner then pays the tied amount.',
    soleBidder:
      t.pricing === 'first'
        ? 'A sole valid bid wins and pays its own amount.'
        : 'A sole valid bid wins and pays the reserve price.',
    noReveal: `A bid not revealed is excluded and reported as unrevealed; its deposit is ${t.unrevealedDeposit}.`,
    lateReveal:
      'A reveal after the reveal window (accepted until the auction is finalized) is recorded as late, excluded from winning, and its deposit refunded.',
    deposits:
      'The winner’s deposit is applied to the price; every other counted, late or below-reserve deposit is refunded. The service records these outcomes; it moves no funds itself.',
    ...(first ? firstRules : {}),
    ...(t.revealBy === 'trustees'
      ? {
          trustees:
            'Each bid also carries its opening (amount and salt) encrypted to the joint key of the room’s trustees. After the reveal window any threshold of them decrypt every opening, so a bid is revealed whether or not its bidder reveals it; a bid so opened counts as revealed when bidding ended. The auction is decided once they have.',
        }
      : {}),
  };
}

const big = (s: string) => BigInt(s);

export function bidStatus(t: AuctionTerms, b: BidRecord): BidStatus {
  if (!b.reveal) return 'unrevealed';
  if (Date.parse(b.reveal.revealedAt) >= Date.parse(t.revealEndsAt)) return 'late';
  if (big(b.reveal.amount) < big(t.reserve)) return 'below_reserve';
  return 'valid';
}

/** Winner, price and every deposit's fate from the recorded bids; deterministic for any order of input. */
export function decideAuction(t: AuctionTerms, bids: readonly BidRecord[]): AuctionOutcome {
  const statuses = bids.map((b) => ({ b, status: bidStatus(t, b) }));
  const valid = statuses
    .filter((s) => s.status === 'valid')
    .map((s) => s.b)
    .sort((x, y) => {
      const a = big(x.reveal!.amount);
      const b = big(y.reveal!.amount);
      if (a !== b) return a > b ? -1 : 1;
      if (x.committedAt !== y.committedAt) return x.committedAt < y.committedAt ? -1 : 1;
      return x.commitment < y.commitment ? -1 : 1;
    });
  const top = valid[0];
  let price: string | null = null;
  let reason: AuctionOutcome['reason'] = 'no_valid_bids';
  if (top) {
    const second = valid[1];
    if (!second) {
      reason = 'sole_bidder';
      price = t.pricing === 'first' ? top.reveal!.amount : t.reserve;
    } else {
      reason = second.reveal!.amount === top.reveal!.amount ? 'tie_earliest_commit' : 'highest_bid';
      if (t.pricing === 'first') price = top.reveal!.amount;
      else {
        const s = big(second.reveal!.amount);
        price = (s > big(t.reserve) ? s : big(t.reserve)).toString();
      }
    }
  }
  const count = (st: BidStatus) => statuses.filter((s) => s.status === st).length;
  return {
    winner: top?.bidder ?? null,
    winningCommitment: top?.commitment ?? null,
    price,
    reason,
    bids: statuses.map(({ b, status }) => ({
      commitment: b.commitment,
      status,
      deposit:
        top && b.commitment === top.commitment
          ? 'applied_to_price'
          : status === 'unrevealed'
            ? t.unrevealedDeposit
            : 'refunded',
    })),
    counts: {
      bids: bids.length,
      valid: valid.length,
      unrevealed: count('unrevealed'),
      late: count('late'),
      belowReserve: count('below_reserve'),
    },
  };
}
