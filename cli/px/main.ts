// `npm run px`'s entry, run in process: `main(argv, io)` parses the command, runs its entry of the
// table (cli/px/table.ts) and answers its exit code (0; 1 for a refusal, its one line on stderr; 2 for
// a mistake in the command). It reads only what it is given (argv, io.env) and writes only to io: it
// never exits, and keeps nothing between runs, so a program (or a test) may call it many times.
import { parseArgs } from 'node:util';
import { parseEnv } from '../../shared/platform/env';
import { printable } from '../../shared/platform/text';
import { UsageError, makeContext, options } from './context';
import type { Io } from './context';
import { commands, delegates, usage } from './table';

export type { Io, Output } from './context';
export { usage };

/** Runs one command; a refusal or a mistake is thrown. */
export async function run(argv: string[], io: Io): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const [group, verb, id, ...extra] = positionals;
  if (values.help || !group) {
    io.stdout.write(`${usage}\n`);
    return;
  }
  if (extra.length) throw new UsageError(`unexpected ${extra.join(' ')}`);
  const context = makeContext(io, parseEnv(io.env), values, group, verb, id);
  const command = commands.get(`${group} ${verb ?? ''}`.trim());
  if (!command) throw new UsageError(`unknown command: ${positionals.join(' ')}`);
  await command.run(context);
}

/** Runs one command line; its exit code. */
export async function main(argv: string[], io: Io): Promise<number> {
  const handedOn = delegates.find((d) => d.name === argv[0]);
  // `px ballot …` and `px approve …`: the member's own client, with the arguments as given.
  if (handedOn) return (await handedOn.load()).main(argv.slice(1), io);
  try {
    await run(argv, io);
    return 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const usageHint =
      err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    io.stderr.write(`${printable(message, { lines: true })}${usageHint ? '\n(npm run px -- --help)' : ''}\n`);
    return usageHint ? 2 : 1;
  }
}
