// Configuration: every setting the service reads, parsed from process.env once, at start.
// Nothing else reads process.env. A wrong value stops start-up with a line naming the variable.
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const url = z.url();
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const slug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes');

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  /** The deployment's own name for where it runs (staging, production, ...); `production` counts as production. */
  APP_ENV: z
    .string()
    .regex(/^[a-z0-9][a-z0-9_-]{0,31}$/, 'a lowercase name such as staging or production')
    .optional(),
  HOST: z.string().default('0.0.0.0'),
  PORT: port.default(3000),
  /**
   * Where the command-line clients and scripts (`npm run demo:pay`, `npm run ballot`, ...) reach the
   * service; default: BASE_URL, else this machine's PORT (see serviceUrl).
   */
  PX_URL: url.optional(),
  /**
   * The key file of `npm run px` (wallets, the license key, sealed bids' salts; written 0600); default
   * ~/.proof-exchange/keys.json.
   */
  PX_KEYS: z.string().min(1).optional(),
  /** Public addresses used in absolute links; default: the app's own address. */
  BASE_URL: url.optional(),
  API_URL: url.optional(),
  SITE_URL: url.optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'a redis:// URL')
    .optional(),
  /** Seed nodes of a Redis Cluster, used instead of REDIS_URL: host:port (or redis[s]://[user:password@]host:port) joined by commas. */
  REDIS_CLUSTER_NODES: z.string().transform(parseClusterNodes).optional(),
  /** Where local state lives: embedded Postgres, development keys, caches. */
  DATA_DIR: z.string().default('.data'),
  EMBEDDED_PG_PORT: port.default(54329),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Bearer token for operator routes and Bull Board; compared in constant time. */
  OPERATOR_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  /** ed25519 seed (32 bytes, hex or base64) of the service's signing key; a development key is made if unset. */
  SERVICE_SIGNING_KEY: z.string().optional(),
  /**
   * ed25519 seed (32 bytes, hex or base64) of the transparency log's own key, which signs its checkpoints
   * and nothing else; a development key is made under DATA_DIR if unset, never in production.
   */
  LOG_SIGNING_KEY: z.string().optional(),
  /**
   * The log's origin: the first line of its checkpoints and its key's name (no spaces or +). Default:
   * the host of SITE_URL, else of BASE_URL, else `localhost`, followed by `/log`.
   */
  LOG_ORIGIN: z
    .string()
    .regex(/^[^\s+]+$/, 'an origin without spaces or +')
    .max(200)
    .optional(),
  /** How often the worker integrates queued log entries (stage records, receipts) into the log. */
  LOG_SEQUENCE_INTERVAL_MS: positiveInt.default(200),
  /**
   * AES-256-GCM key (32 bytes, hex or base64) sealing the secrets the service keeps to use again (webhook
   * signing secrets, the credentials an A2A push receiver asked for); default: derived from the signing
   * key. Set it in production, so the signing key can rotate without touching the sealed secrets.
   */
  SEALING_KEY: z.string().optional(),
  /**
   * Keys SEALING_KEY had before (comma-separated, same forms): what they sealed still opens, and
   * `release` seals it again under SEALING_KEY. Drop one once `release` reports no row under it.
   */
  SEALING_KEY_PREVIOUS: z.string().optional(),
  /** Proxy hops in front of the web process whose X-Forwarded-For is trusted (0: none). */
  TRUST_PROXY: z.coerce.number().int().min(0).max(10).default(0),
  /**
   * IPv6 clients count as their network of this many leading bits for every per-address budget, trial
   * limit and anonymous scope (a subscriber gets a /64 or more); IPv4 clients count by address.
   */
  IPV6_PREFIX_LENGTH: z.coerce.number().int().min(32).max(128).default(64),
  BODY_LIMIT_BYTES: positiveInt.default(64 * 1024),
  /** A request's headers must arrive within this many ms, or the connection is closed (408). */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).default(10_000),
  /**
   * The whole request (headers and body) must arrive within this many ms. Above the 30 s long poll
   * (`wait` on a job, at most 30 s), so that a poll is never cut whatever the Node version counts.
   */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(31_000).default(40_000),
  /** Open connections the web process takes; past it a connection is answered 503 and closed. */
  HTTP_MAX_CONNECTIONS: positiveInt.default(10_000),
  /**
   * Requests the web process takes at once (taken, not yet answered; long polls and streams count only
   * until they start waiting); past it a request is answered 503 `overloaded` with Retry-After: 1.
   */
  OVERLOAD_MAX_IN_FLIGHT: positiveInt.default(64),
  /**
   * Requests whose body is still arriving that the web process holds at once (they take no in-flight
   * place until it has); past it a new request with a body is answered 503 `overloaded`.
   */
  OVERLOAD_MAX_BODIES: positiveInt.default(64),
  /**
   * A request body must arrive within HTTP_BODY_GRACE_MS plus its length at this many bytes a second,
   * or it is answered 408 and its connection closed; 0: only HTTP_REQUEST_TIMEOUT_MS applies.
   */
  HTTP_BODY_MIN_RATE: z.coerce.number().int().min(0).default(8192),
  HTTP_BODY_GRACE_MS: z.coerce.number().int().min(0).default(5000),
  /**
   * While the requests the web process took have recently spent longer than this (ms) in it, it takes
   * only half of OVERLOAD_MAX_IN_FLIGHT at once; 0: off.
   */
  OVERLOAD_TARGET_MS: z.coerce.number().int().min(0).default(50),
  /**
   * Event-loop delay (ms) past which the web process sheds new requests the same way; 0 (the default):
   * off. For a process whose requests do long synchronous work, where the in-flight count says little.
   */
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: z.coerce.number().int().min(0).default(0),
  /**
   * Worker threads of the web's verify pool, where checks that can cost more than a few ms of CPU (a
   * governance package's trustee arithmetic and ballot openings) run off the event loop.
   */
  VERIFY_POOL_THREADS: positiveInt.default(1),
  /** Checks the verify pool holds (running and waiting) at once; past it one is answered 503 `overloaded`. */
  VERIFY_POOL_QUEUE: positiveInt.default(16),
  /** Checks one client network (or caller) may hold in the verify pool at once; past it, 503 `overloaded`. */
  VERIFY_POOL_PER_NETWORK: positiveInt.default(2),
  /** A check not done this long (ms) after it was handed to the verify pool, waiting included, is stopped: 503. */
  VERIFY_POOL_TIMEOUT_MS: positiveInt.default(15_000),
  RATE_LIMIT_IP_PER_MINUTE: positiveInt.default(1200),
  RATE_LIMIT_KEY_PER_MINUTE: positiveInt.default(2400),
  /** Off only in development: refused in production (developmentSwitches in startup-checks.ts). */
  RATE_LIMIT_ENABLED: bool.default(true),
  /** Anonymous blind-policy prove requests per client address per minute. */
  PROVE_ANON_PER_MINUTE: positiveInt.default(10),
  /** Blind-policy proofs one caller (agent, or address when anonymous) may have queued or running at once. */
  PROVE_MAX_IN_FLIGHT: positiveInt.default(4),
  /** Blind-policy verify requests per client address per minute (each is a Groth16 pairing check). */
  VERIFY_PER_MINUTE: positiveInt.default(60),
  /**
   * Presented credentials that authenticate nothing (a wrong operator or metrics token, a junk Bearer
   * key, a wrong Bull Board password) one client network may send per minute; past it, every request
   * of that network carrying a credential is refused with 429 before the credential is checked.
   */
  AUTH_FAILURES_PER_MINUTE: positiveInt.default(20),
  /** Agents one client network (IPv4 address, IPv6 /64) may register per hour. */
  AGENT_REGISTRATIONS_PER_HOUR: positiveInt.default(30),
  /** TRIAL licenses issued to one client address per day. */
  TRIAL_PER_ADDRESS_PER_DAY: positiveInt.default(3),
  /** A TRIAL challenge must be signed and used within this many seconds of issue. */
  TRIAL_CHALLENGE_TTL_SECONDS: positiveInt.default(600),
  /**
   * When set, GET /metrics (web, worker and prover) needs Authorization: Bearer <METRICS_TOKEN>. In
   * production metrics are refused without it unless METRICS_PUBLIC says they may be read by anyone.
   */
  METRICS_TOKEN: z.string().min(16, 'at least 16 characters').optional(),
  /** In production, serve /metrics without METRICS_TOKEN (a network that only the scraper reaches). */
  METRICS_PUBLIC: bool.default(false),
  /** Interface of the worker's own /metrics listener. */
  WORKER_METRICS_HOST: z.string().default('127.0.0.1'),
  /** Port of the prover's own /metrics endpoint; unset: none. */
  PROVER_METRICS_PORT: port.optional(),
  /** Interface of the prover's own /metrics listener. */
  PROVER_METRICS_HOST: z.string().default('127.0.0.1'),
  /**
   * OpenTelemetry traces: the OTLP/HTTP collector's base address (spans go to <it>/v1/traces). Traces
   * are on when this, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_TRACES_EXPORTER=otlp is set; off otherwise.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: url.optional(),
  /** The full address spans are posted to, instead of <OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  /** Headers sent with each export, e.g. a collector's credential: key=value pairs joined by commas. */
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^[^=,\s]+=[^,]*(?:,[^=,\s]+=[^,]*)*$/, 'key=value pairs joined by commas')
    .optional(),
  /** `otlp` turns traces on (default address http://localhost:4318); `none` keeps them off even with an endpoint. */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).optional(),
  /** The service name on every span; default: proof-exchange-<process type> (web, worker, prover). */
  OTEL_SERVICE_NAME: z.string().min(1).max(100).optional(),
  /**
   * How long (ms) the answers of readiness's checks and of health's dependency summary are reused (the
   * callers meanwhile, and those while a run is under way, share one run); 0: only the run under way.
   */
  READINESS_CACHE_MS: z.coerce.number().int().min(0).default(2000),
  /** How long a provider status probe is reused before the provider is asked again. */
  PROVIDER_STATUS_CACHE_MS: z.coerce.number().int().min(0).default(5_000),
  /** BullMQ key prefix; wrap in braces (e.g. {px}) for Redis Cluster hash tags. */
  QUEUE_PREFIX: z.string().min(1).default('px'),
  WORKER_CONCURRENCY: positiveInt.default(32),
  JOB_ATTEMPTS: positiveInt.default(5),
  JOB_BACKOFF_MS: positiveInt.default(1000),
  /** A job running longer than this is ended as failed by the sweeper. */
  JOB_TIMEOUT_MS: positiveInt.default(10 * 60 * 1000),
  /**
   * A job whose worker died (SIGKILL, lost host) runs again on another worker within this period: the
   * BullMQ lock lives half of it, renewed every quarter, and the stalled check runs every third.
   */
  WORKER_LOCK_DURATION_MS: z.coerce.number().int().min(100).default(30_000),
  /**
   * Times a job may be found without a live worker (a worker killed holding it, or a Redis outage that
   * outlived its lock: at most once per outage) before it is failed as a job that crashes its worker.
   */
  WORKER_MAX_STALLED_COUNT: positiveInt.default(10),
  /**
   * While Postgres or Redis is unreachable, a job goes back to the delayed set without spending an
   * attempt; its wait grows with the outage from the first to the second, each drawn between half and all.
   */
  WORKER_OUTAGE_RETRY_MIN_MS: positiveInt.default(500),
  WORKER_OUTAGE_RETRY_MAX_MS: positiveInt.default(10_000),
  SWEEP_INTERVAL_MS: positiveInt.default(5_000),
  /** A row left queued this long without a live BullMQ job is re-enqueued. */
  SWEEP_GRACE_MS: positiveInt.default(3_000),
  /**
   * The log's witnesses: a C2SP tlog-policy text (`witness <name> <vkey> <url>` lines, then `group` and
   * `quorum` lines), or the path of a file holding one. The worker asks each witness that has a URL to
   * cosign every new checkpoint; the policy is also what verifiers are told to require. Unset: none.
   */
  LOG_WITNESSES: z.string().optional(),
  /** How often the worker looks for a new checkpoint to send to the witnesses. */
  LOG_WITNESS_POLL_MS: positiveInt.default(1000),
  /** One add-checkpoint request waits this long for a witness's answer. */
  LOG_WITNESS_TIMEOUT_MS: positiveInt.default(5000),
  /** The longest wait before a witness that failed is asked again; the wait doubles from LOG_WITNESS_POLL_MS. */
  LOG_WITNESS_RETRY_MAX_MS: positiveInt.default(5 * 60_000),
  KEEP_COMPLETED_JOBS: z.coerce.number().int().min(0).default(1000),
  KEEP_FAILED_JOBS: z.coerce.number().int().min(0).default(5000),
  DB_POOL_MAX: positiveInt.default(10),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
  /** Port of the worker's own /metrics endpoint; unset: none. */
  WORKER_METRICS_PORT: port.optional(),
  /** Configurable path segments of the commercial routes. */
  LOCAL_AI_SLUG: slug.default('local-ai'),
  RPC_PROVIDER_SLUG: slug.default('rpc'),
  /** Powers-of-tau ceremony file for the circuit build; unset: the project's insecure development file. */
  CIRCUIT_PTAU: z.string().optional(),
  /** Folder with the circuit artifacts (wasm, zkey, vkey, manifest); default: circuits/artifacts. */
  CIRCUIT_ARTIFACTS_DIR: z.string().optional(),
  /**
   * blake2b-512 hashes (128 hex, comma-separated) of powers-of-tau files the operator trusts beside the
   * published ones in circuits/ceremony/ptau-hashes.json; unset: only those.
   */
  PTAU_PINNED_HASHES: z
    .string()
    .default('')
    .transform((s) =>
      s
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== ''),
    )
    .pipe(z.array(z.string().regex(/^[0-9a-f]{128}$/, 'a blake2b-512 hash as 128 hex characters'))),
  /** In production, run with the insecure development circuit setup anyway (proofs are forgeable). */
  ALLOW_INSECURE_CIRCUITS: bool.default(false),
  /** Groth16 prover: auto picks native when present, then rapidsnark when RAPIDSNARK_BIN is set, else snarkjs. */
  PROVER_BACKEND: z.enum(['auto', 'snarkjs', 'rapidsnark', 'native']).default('auto'),
  /** Path of a rapidsnark `prover` binary. */
  RAPIDSNARK_BIN: z.string().optional(),
  /** A rapidsnark run longer than this is killed. */
  RAPIDSNARK_TIMEOUT_MS: positiveInt.default(120_000),
  /** Treasury receiving addresses, one per chain family; an asset whose family has none is disabled. */
  TREASURY_SOLANA: z
    .string()
    .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'a base58 Solana address')
    .optional(),
  TREASURY_EVM: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, 'a 0x-prefixed 20-byte hex address')
    .optional(),
  TREASURY_BITCOIN: z
    .string()
    .regex(
      /^(?:[13][1-9A-HJ-NP-Za-km-z]{25,34}|bc1[02-9ac-hj-np-z]{11,71}|BC1[02-9AC-HJ-NP-Z]{11,71}|[mn2][1-9A-HJ-NP-Za-km-z]{25,34}|(?:tb1|bcrt1)[02-9ac-hj-np-z]{11,71})$/,
      'a Bitcoin address (base58 or bech32)',
    )
    .optional(),
  /**
   * The treasury's Bitcoin account key for a fresh BIP84 address per quote: an xpub/zpub (tpub/vpub on
   * test networks) or a `wpkh([origin]xpub…/0/*)` descriptor. Unset: every BTC quote pays
   * TREASURY_BITCOIN, told apart by a unique amount. Parsed at start by the chains line
   * (`chainSettingIssues`).
   */
  TREASURY_BITCOIN_XPUB: z.string().optional(),
  TREASURY_MONERO: z
    .string()
    .regex(
      /^[4589AB7][1-9A-HJ-NP-Za-km-z]{94}(?:[1-9A-HJ-NP-Za-km-z]{11})?$/,
      'a Monero address (95 or 106 base58 chars)',
    )
    .optional(),
  /** Partial overrides of the asset registry, JSON: {"USDC-SOL": {"contract": "...", "disabled": true}, ...}. */
  ASSETS_JSON: z.string().optional(),
  /** USD prices of the non-stable assets, e.g. SOL=142.50,ETH=3150.10,BTC=97000,XMR=160; decimals, never floats. */
  RATES_USD: z
    .string()
    .regex(/^[A-Z0-9]+=\d+(?:\.\d+)?(?:,[A-Z0-9]+=\d+(?:\.\d+)?)*$/, 'SYMBOL=price pairs joined by commas')
    .optional(),
  /** When the RATES_USD prices were taken (ISO 8601); default: the time the process started. */
  RATES_AS_OF: z.iso.datetime({ offset: true }).optional(),
  /** An HTTP JSON rate source ({"asOf": "...", "rates": {"SOL": "142.5"}}); preferred over RATES_USD when set. */
  RATE_SOURCE_URL: url.optional(),
  /** A quote refuses a rate older than this. */
  RATE_MAX_AGE_SECONDS: positiveInt.default(24 * 3600),
  QUOTE_TTL_SECONDS: positiveInt.default(15 * 60),
  /** How long after expiry a quote is still watched; a payment seen in this window is paid_late. */
  QUOTE_LATE_WINDOW_SECONDS: positiveInt.default(60 * 60),
  /**
   * Unique amounts one caller may hold open per asset and receiving address (job quotes, checkouts and
   * gate requests together): a client network (IPv4 address, IPv6 prefix) with its anonymous requests
   * and the free agents it registered, or a TRIAL license. Over it the caller is answered 429.
   */
  AMOUNT_HOLDS_PER_CALLER: positiveInt.default(20),
  /** The same for a paid license (Starter, Business, Enterprise). */
  AMOUNT_HOLDS_PER_LICENSE: positiveInt.default(200),
  /**
   * The share of one price's unique amounts that the holds of callers without a paid license (job
   * quotes, checkouts) may fill; the rest stays for paid licenses. With AMOUNT_GATE_SHARE below 1.
   */
  AMOUNT_PUBLIC_SHARE: z.coerce.number().gt(0).lt(1).default(0.7),
  /**
   * Open payment-gate requests per asset and receiving address, at most this share of the asset's
   * `amountSpread`, wherever their amounts lie: gate requests can never take the room job quotes need.
   */
  AMOUNT_GATE_SHARE: z.coerce.number().gt(0).lt(1).default(0.1),
  /** Chain endpoints; a family without one has no adapter (its payments stay pending). */
  SOLANA_RPC_URL: url.optional(),
  EVM_RPC_URL: url.optional(),
  BITCOIN_ESPLORA_URL: url.optional(),
  MONERO_WALLET_RPC_URL: url.optional(),
  /** Extra Solana token accounts (comma-separated) that count as the treasury's besides its associated ones. */
  SOLANA_TOKEN_ACCOUNTS: z
    .string()
    .regex(
      /^[1-9A-HJ-NP-Za-km-z]{32,44}(?:,[1-9A-HJ-NP-Za-km-z]{32,44})*$/,
      'base58 addresses joined by commas',
    )
    .optional(),
  /**
   * The local development chain of `npm start`: `auto` runs one when no chain is configured at all (never
   * in production), `on` asks for it (refused in production or beside a configured EVM chain), `off` never.
   */
  DEVNET: z.enum(['auto', 'on', 'off']).default('auto'),
  /** Port of the local development chain's JSON-RPC (on 127.0.0.1). */
  DEVNET_PORT: port.default(8545),
  /** Set by `npm start` in its processes: the EVM endpoint is its local development chain. Refused in production (developmentSwitches). */
  EVM_DEVNET: bool.default(false),
  EVM_CONFIRMATIONS: positiveInt.default(12),
  /**
   * An x402 facilitator (its /verify, /settle and /supported): PAYMENT-SIGNATURE retries of createJob
   * are verified and settled through it. Preferred over X402_EVM_SETTLER_KEY when both are set.
   */
  X402_FACILITATOR_URL: url.optional(),
  /** One facilitator call waits this long (settling includes waiting for the transaction's receipt). */
  X402_FACILITATOR_TIMEOUT_MS: positiveInt.default(60_000),
  /**
   * Private key (0x + 64 hex) of the service's own EVM gas account: without a facilitator, x402
   * authorizations are verified here and broadcast from it over EVM_RPC_URL. It pays gas only; the
   * transfer goes from the payer to TREASURY_EVM. Never logged.
   */
  X402_EVM_SETTLER_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'a 0x-prefixed 32-byte hex private key')
    .optional(),
  BITCOIN_CONFIRMATIONS: positiveInt.default(2),
  MONERO_CONFIRMATIONS: positiveInt.default(10),
  CHAIN_RPC_TIMEOUT_MS: positiveInt.default(10_000),
  CHAIN_RPC_RETRIES: z.coerce.number().int().min(0).max(5).default(2),
  /** Most JSON-RPC calls the EVM adapter puts in one batch request (a check takes two, plus one per new block). */
  EVM_RPC_BATCH_MAX: positiveInt.default(100),
  /** Payments one worker process holds at once: checks wait on the chain and Postgres, not on its CPU. */
  PAYMENTS_CONCURRENCY: positiveInt.default(256),
  /** Most payments one worker checks together (one RPC batch, shared SQL statements). */
  PAYMENT_CHECK_BATCH: positiveInt.default(256),
  /** First wait before a payment the chain has not settled yet is asked about again; doubles each time. */
  PAYMENT_RECHECK_MS: positiveInt.default(15_000),
  /** The longest wait between two checks of one pending payment. */
  PAYMENT_RECHECK_MAX_MS: positiveInt.default(5 * 60_000),
  /** AES-256-GCM key (32 bytes, hex or base64) sealing proof inputs between web and prover; default: derived from the signing key. */
  PROOF_INPUT_KEY: z.string().optional(),
  /** Proofs proved at once by one prover process; default: the core count. */
  PROVER_CONCURRENCY: positiveInt.optional(),
  /** License prices in USD cents per tier, e.g. Starter=4900,Business=19900,Enterprise=99900 (partial overrides). */
  LICENSE_PRICES_USD_CENTS: z
    .string()
    .regex(
      /^(Starter|Business|Enterprise)=\d{1,9}(?:,(Starter|Business|Enterprise)=\d{1,9})*$/,
      'Tier=cents pairs',
    )
    .optional(),
  /** Share of confirmed revenue credited to a referrer, in basis points (1000 = 10 %). */
  REFERRAL_COMMISSION_BPS: z.coerce.number().int().min(0).max(10_000).default(1000),
  /**
   * Whether user-given targets (webhooks, agent endpoints, deliveries) may be loopback, private or
   * otherwise internal addresses, and plain http. Off unless set: an opt-in for a closed network.
   */
  LOGISTICS_ALLOW_PRIVATE_TARGETS: bool.default(false),
  /** One webhook or hand-off POST waits this long for an answer. */
  LOGISTICS_TIMEOUT_MS: positiveInt.default(5_000),
  /** A delivery waits at most this long for its job to end before it fails. */
  LOGISTICS_MAX_WAIT_SECONDS: positiveInt.default(24 * 3600),
  /** The local AI runtime (OpenAI-compatible HTTP API) whose runtime proof the service signs; unset: none. */
  LOCAL_AI_URL: url.optional(),
  LOCAL_AI_MODEL: z.string().min(1).max(200).optional(),
  /** Digest of the model weights the runtime serves, e.g. sha256:<64 hex>. */
  LOCAL_AI_MODEL_DIGEST: z
    .string()
    .regex(/^[a-z0-9]+:[0-9a-fA-F]{32,128}$/, 'algorithm:hex, e.g. sha256:…')
    .optional(),
  /** The external private-payments provider ({payments_url}); unset: its routes say configured: false. */
  PAYMENTS_PROVIDER_URL: url.optional(),
  /** Label shown as `source` in the login challenge; default: the provider's host. */
  PAYMENTS_PROVIDER_LABEL: z.string().min(1).max(100).optional(),
  /** Shared secret the provider signs its challenge redemptions with (HMAC-SHA256); unset: none can be redeemed. */
  PAYMENTS_PROVIDER_SECRET: z.string().min(32, 'at least 32 characters').optional(),
  /** The provider is a local stand-in: the login challenge's title carries a mock marker. Refused in production. */
  PAYMENTS_PROVIDER_MOCK: bool.default(false),
  /** One probe or proxied call to an external provider waits this long. */
  PROVIDER_TIMEOUT_MS: positiveInt.default(2_000),
  /** Follow the configured chains for transfers to the treasury (default: yes when an RPC is set). */
  CHAIN_FOLLOWER_ENABLED: bool.optional(),
  CHAIN_FOLLOWER_INTERVAL_MS: positiveInt.default(2_000),
  /** Blocks read per tick at most, so a follower far behind catches up in steps. */
  CHAIN_FOLLOWER_MAX_BLOCKS: positiveInt.default(50),
  /** How long a payment-gate amount stays reserved. */
  PAYMENT_GATE_WINDOW_SECONDS: positiveInt.default(30 * 60),
  /** The random part added to a payment-gate amount: 1 to this many base units. */
  PAYMENT_GATE_SPREAD: positiveInt.default(9_999),
  /** AES-256-GCM key (32 bytes, hex or base64) wrapping per-proposal ballot keys; default: derived from the signing key. */
  BALLOT_KEY: z.string().optional(),
  /** Keys BALLOT_KEY had before (comma-separated): as SEALING_KEY_PREVIOUS, for proposals' and rooms' keys. */
  BALLOT_KEY_PREVIOUS: z.string().optional(),
  /**
   * In production, start on a database holding payments settled on the local development chain of
   * `npm start` (demo money, never counted as revenue); refused unless set.
   */
  ALLOW_DEVELOPMENT_SETTLEMENTS: bool.default(false),
  /** Advanced payroll/payout module; off by default (the service never moves funds itself). */
  PRIVATE_PAYOUT_ENABLED: bool.default(false),
  /** Verify every native proof before storing it; a failed check falls back to snarkjs and is logged. */
  NATIVE_PROOF_CHECK: bool.default(true),
  /** A private-payments login challenge can be redeemed once, within this many seconds of issue. */
  LOGIN_CHALLENGE_TTL_SECONDS: positiveInt.default(300),
  /** How often the worker turns new job events of webhook-subscribed jobs into signed deliveries. */
  JOB_WEBHOOK_POLL_MS: positiveInt.default(250),
  PAYMENTS_PROVIDER_SLUG: slug.default('private-payments'),
});

export type Env = z.infer<typeof envSchema>;

/** What says whether a process runs in production (isProduction reads nothing else). */
export type ProductionSettings = Pick<Env, 'NODE_ENV' | 'APP_ENV'>;

/** Production by either name: NODE_ENV, or the deployment's APP_ENV. */
export function isProduction(e: ProductionSettings): boolean {
  return e.NODE_ENV === 'production' || e.APP_ENV === 'production';
}

/** Whether any chain is configured: a treasury or an endpoint of any family. */
export function chainConfigured(e: Env): boolean {
  return [
    e.TREASURY_SOLANA,
    e.TREASURY_EVM,
    e.TREASURY_BITCOIN,
    e.TREASURY_BITCOIN_XPUB,
    e.TREASURY_MONERO,
    e.SOLANA_RPC_URL,
    e.EVM_RPC_URL,
    e.BITCOIN_ESPLORA_URL,
    e.MONERO_WALLET_RPC_URL,
  ].some((v) => v !== undefined);
}

/** Rules between variables, checked once each variable has parsed. */
const checkedSchema = envSchema.superRefine((e, ctx) => {
  // Paid licenses keep the rest of every price's amounts: the two shares leave some.
  if (e.AMOUNT_PUBLIC_SHARE + e.AMOUNT_GATE_SHARE >= 1)
    ctx.addIssue({
      code: 'custom',
      path: ['AMOUNT_PUBLIC_SHARE'],
      message: 'AMOUNT_PUBLIC_SHARE and AMOUNT_GATE_SHARE together must stay below 1',
    });
  // The development chain in production (EVM_DEVNET, DEVNET=on) is refused with every other development
  // switch, at each process's start (developmentSwitches in startup-checks.ts).
  if (e.DEVNET === 'on' && !e.EVM_DEVNET && (e.EVM_RPC_URL || e.TREASURY_EVM))
    ctx.addIssue({
      code: 'custom',
      path: ['DEVNET'],
      message: 'on, but an EVM chain is configured (EVM_RPC_URL or TREASURY_EVM); unset one or the other',
    });
  if (!e.REDIS_CLUSTER_NODES) return;
  if (e.REDIS_URL)
    ctx.addIssue({
      code: 'custom',
      path: ['REDIS_URL'],
      message: 'set REDIS_URL or REDIS_CLUSTER_NODES, not both',
    });
  // BullMQ's scripts touch many keys of one queue at once, which a cluster allows only within one slot.
  if (!hashTag(e.QUEUE_PREFIX))
    ctx.addIssue({
      code: 'custom',
      path: ['QUEUE_PREFIX'],
      message: `must carry a hash tag on a Redis Cluster, e.g. {${e.QUEUE_PREFIX.replace(/[{}]/g, '') || 'px'}}, so each queue's keys share one slot`,
    });
});

/** The seed nodes of a Redis Cluster, and the credentials and TLS every node is reached with. */
export interface ClusterSeeds {
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
}

const clusterEntry =
  /^(?:(rediss?):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?)?(\[[0-9A-Fa-f:.]+\]|[^\s:/@[\]]+):(\d{1,5})\/?$/;

/** A URL's user or password, percent-decoded; a malformed escape is kept as written. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function parseClusterNodes(spec: string, ctx: z.RefinementCtx): ClusterSeeds {
  const seeds: ClusterSeeds = { nodes: [], tls: false };
  const schemes = new Set<string>();
  for (const entry of spec.split(',').map((e) => e.trim())) {
    const m = clusterEntry.exec(entry);
    const port = Number(m?.[5]);
    if (!m || port < 1 || port > 65535) {
      ctx.addIssue({
        code: 'custom',
        message: `'${entry.replace(/\/\/[^@/]*@/, '//…@')}' is not host:port or redis[s]://[user:password@]host:port`,
      });
      return z.NEVER;
    }
    schemes.add(m[1] ?? 'redis');
    seeds.nodes.push({ host: m[4]!.replace(/^\[|\]$/g, ''), port });
    if (m[2]) seeds.username ??= percentDecoded(m[2]);
    if (m[3]) seeds.password ??= percentDecoded(m[3]);
  }
  if (schemes.size > 1) {
    ctx.addIssue({
      code: 'custom',
      message: 'mixes redis:// and rediss:// nodes; a cluster is all TLS or none',
    });
    return z.NEVER;
  }
  seeds.tls = schemes.has('rediss');
  return seeds;
}

/**
 * The hash tag of a key prefix (the text between its first `{` and the next `}`), or null. Redis
 * Cluster hashes only the tag, so every key under a tagged prefix lands in one slot.
 */
export function hashTag(prefix: string): string | null {
  const open = prefix.indexOf('{');
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : null;
}

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`Invalid configuration:\n${issues.map((i) => `  ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses a variable map; unset and empty variables take their defaults. */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = checkedSchema.safeParse(cleaned);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  }
  // A production process without BASE_URL is refused by its start-up checks, beside every other
  // missing setting (shared/platform/startup-checks.ts), so one refusal names them all.
  return parsed.data;
}

/** Whether the test runner loaded this process: a refusal at start throws instead of exiting. */
export const underTestRunner = (): boolean => Boolean(process.env.VITEST);

/**
 * Stops a process at start on wrong settings: one line per issue on stderr, exit 78. Under the test
 * runner it throws instead. Product lines check the settings only they can parse with it (each
 * process's main calls them).
 */
export function refuseConfig(issues: readonly string[]): void {
  if (issues.length === 0) return;
  const err = new ConfigError([...issues]);
  if (!underTestRunner()) {
    process.stderr.write(`${err.message}\n`);
    process.exit(78);
  }
  throw err;
}

function load(): Env {
  try {
    return parseEnv(process.env);
  } catch (err) {
    if (err instanceof ConfigError) refuseConfig(err.issues);
    throw err;
  }
}

export const env: Env = load();

/**
 * The one address every script and client of this checkout talks to: PX_URL, else BASE_URL, else the
 * port this checkout's web listens on, on this machine.
 */
export function serviceUrl(e: Pick<Env, 'PX_URL' | 'BASE_URL' | 'HOST' | 'PORT'> = env): string {
  if (e.PX_URL) return e.PX_URL.replace(/\/+$/, '');
  if (e.BASE_URL) return e.BASE_URL.replace(/\/+$/, '');
  const host = ['0.0.0.0', '::', ''].includes(e.HOST)
    ? '127.0.0.1'
    : e.HOST.includes(':')
      ? `[${e.HOST}]`
      : e.HOST;
  return `http://${host}:${e.PORT}`;
}

/**
 * This process's own variables, for a program whose entry takes its environment as an argument
 * (`npm run px`'s main): its command line passes them.
 */
export const processVariables = (): Readonly<Record<string, string | undefined>> => process.env;

/** The environment for a child process this one starts (npm start's supervisor), with overrides. */
export function childProcessEnv(overrides: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, ...overrides };
}
