// What a command line of cli/ is given when it runs in process: its output streams and its variables.
// The command line itself passes process.stdout, process.stderr and its own environment; a test or
// another command (`px ballot …`) passes its own, so a run reads and writes nothing of the process.
import { processVariables } from '../shared/platform/env';

/** Where a run writes: process.stdout and process.stderr for the command line, a buffer in a test. */
export interface Output {
  write(chunk: string | Uint8Array): unknown;
}

export interface Io {
  stdout: Output;
  stderr: Output;
  /** The environment's variables (the command line passes its own): read as the service's settings. */
  env: Readonly<Record<string, string | undefined>>;
  /** The fetch the client calls the service with; default: the global one. */
  fetch?: typeof fetch;
}

/** The snarkjs curves' worker threads, which keep a process alive after a proof until terminated. */
export async function terminateCurves(): Promise<void> {
  const holder = globalThis as { curve_bn128?: { terminate(): Promise<void> } };
  await holder.curve_bn128?.terminate();
}

/**
 * Runs a main as its command line: this process's arguments, streams and variables; its exit code; then
 * the curves' threads ended, so the process exits once its output is written.
 */
export async function commandLine(main: (argv: string[], io: Io) => Promise<number>): Promise<void> {
  process.exitCode = await main(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    env: processVariables(),
  });
  await terminateCurves();
}

/**
 * What a failed fetch says to a person: "the service does not answer at <where> (<code>)" where the
 * connection itself failed (fetch's bare "fetch failed"), the error's own message otherwise.
 */
export function unreachableLine(err: unknown, url?: string | URL): string | undefined {
  if (!(err instanceof TypeError) || err.message !== 'fetch failed') return undefined;
  const cause = (err as { cause?: { code?: string; message?: string; address?: string; port?: number } })
    .cause;
  const where = url
    ? new URL(String(url)).origin
    : cause?.address
      ? `${cause.address}${cause.port ? `:${cause.port}` : ''}`
      : 'the address given';
  return `the service does not answer at ${where} (${cause?.code ?? cause?.message ?? 'no connection'})`;
}
