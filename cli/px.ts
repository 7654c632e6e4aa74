// `npm run px -- <command>`: one command line for every flow of the platform, over the typed client
// (cli/client/), with the crypto done here: wallets and their signatures, sealed bids, actor
// commitments and document hashes. Ballots and workflow approvals are the voter's and approver's own
// clients (`px ballot …` runs what `npm run ballot -- …` runs, `px approve …` `npm run approve -- …`).
// Keys live in the key file (PX_KEYS, else ~/.proof-exchange/keys.json; mode 0600), never printed. The
// service is --url, else PX_URL, else BASE_URL, else this machine's PORT; the credential --token, else
// the license the key file holds, else OPERATOR_TOKEN. A refusal prints one line and exits 1. The commands
// are the table of cli/px/ (table.ts), run in process by main (cli/px/main.ts); this file is its command line.
import { commandLine } from './io';
import { main } from './px/main';

export { main, usage } from './px/main';

// The command line: this process's arguments, variables and streams, and its exit code.
// A ballot or an approval proved here leaves snarkjs's curve threads running: they are ended with it.
if (import.meta.url === `file://${process.argv[1]}`) await commandLine(main);
