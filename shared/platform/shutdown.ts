// One shutdown registry per process: closers run once, in reverse order, under a timeout; a second signal forces exit.
import { env } from './env';
import { logger } from './log';

type Closer = { name: string; close: () => Promise<unknown> | unknown };

/** Exits once the log has written what it holds (its last line among it), or after a second at most. */
function exitFlushed(code: number): void {
  const exit = () => process.exit(code);
  setTimeout(exit, 1000).unref();
  try {
    logger.flush(exit);
  } catch {
    exit();
  }
}

export class Shutdown {
  private readonly closers: Closer[] = [];
  private running: Promise<void> | undefined;

  register(name: string, close: Closer['close']): void {
    this.closers.push({ name, close });
  }

  /** Runs every closer (latest registered first); idempotent. */
  run(reason: string): Promise<void> {
    this.running ??= (async () => {
      const started = performance.now();
      logger.info({ reason }, 'shutting down');
      const timeout = new Promise<'timeout'>((r) =>
        setTimeout(() => r('timeout'), env.SHUTDOWN_TIMEOUT_MS).unref(),
      );
      // Latest registered first (stop taking work, then finish it, then close stores); one failing closer
      // never stops the rest.
      const all = (async () => {
        for (const c of [...this.closers].reverse()) {
          try {
            await c.close();
          } catch (err) {
            logger.warn({ closer: c.name, err: (err as Error).message }, 'closer failed');
          }
        }
      })();
      const timedOut = (await Promise.race([all, timeout])) === 'timeout';
      if (timedOut) logger.warn('shutdown timed out; exiting anyway');
      // The process's last line: an operator (or a supervisor's log) sees it ended, and how.
      logger.info({ reason, ms: Math.round(performance.now() - started), timedOut }, 'stopped');
    })();
    return this.running;
  }

  /**
   * Installs SIGTERM/SIGINT handlers that run the registry then exit. A process started by a supervisor
   * (`npm start`, over an IPC channel) also stops when that channel closes: the supervisor is gone, so
   * nobody would ever signal it.
   */
  installSignalHandlers(): void {
    let signals = 0;
    const onSignal = (sig: string) => {
      signals += 1;
      if (signals > 1) {
        logger.warn({ signal: sig }, 'second signal: exiting now');
        process.exit(1);
      }
      void this.run(sig).then(() => exitFlushed(0));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    if (process.send) process.once('disconnect', () => onSignal('supervisor gone'));
  }
}
