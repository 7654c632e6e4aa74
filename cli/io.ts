// What a command line of cli/ is given when it runs in process: its output streams and its variables.
// The command line itself passes process.stdout, process.stderr and its own environment; a test or
// another command (`px ballot …`) passes its own, so a run reads and writes nothing of the process.

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
