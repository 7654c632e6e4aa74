// The command table of `npm run px`: every command by its two words, in the order the usage lists them,
// and the member's own clients `px ballot …` and `px approve …` hand their arguments to.
import { auctionCommands } from './auctions';
import type { Command, Io } from './context';
import { proposalCommands } from './proposals';
import { roomCommands } from './rooms';
import { treasuryCommands } from './treasury';
import { walletCommands } from './wallets';
import { workflowCommands } from './workflows';

/** A first word whose arguments go, as given, to another client of cli/, run in this process. */
export interface Delegate {
  name: string;
  usage: string;
  /** The client's main, loaded when it runs (it brings the zero-knowledge libraries). */
  load: () => Promise<{ main(argv: string[], io: Io): Promise<number> }>;
}

export const delegates: readonly Delegate[] = [
  {
    name: 'ballot',
    usage:
      'ballot …                              npm run ballot -- … (identity, options, vote, make, submit)',
    load: () => import('../ballot'),
  },
  {
    name: 'approve',
    usage: 'approve …                             npm run approve -- … (identity, prove, submit, approve)',
    load: () => import('../approve'),
  },
  {
    name: 'issuer',
    usage:
      "issuer …                              an issuer's credentials, offline (keys, issue, revoke, publish, check)",
    load: () => import('../issuer'),
  },
];

const before: readonly Command[] = [...walletCommands, ...roomCommands, ...proposalCommands];
const after: readonly Command[] = [...treasuryCommands, ...auctionCommands, ...workflowCommands];

/** The commands by their two words. */
export const commands: ReadonlyMap<string, Command> = new Map(
  [...before, ...after].map((command) => [command.name, command]),
);

const lines = (entries: readonly { usage?: string }[]) =>
  entries.flatMap((entry) => (entry.usage ? [`  ${entry.usage}`] : []));

export const usage = [
  'usage: npm run px -- <command> [options]',
  ...lines(before),
  ...lines(delegates),
  ...lines(after),
  `Options: --keys FILE (else PX_KEYS), --url URL (else PX_URL), --token TOKEN, --field PATH (print that field
of the answer, e.g. --field roomId; several: on one line), --out FILE (write the whole answer there), --timeout SECONDS (for
--wait; default 600).`,
].join('\n');
