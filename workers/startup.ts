// What the worker, prover and release processes check of the database before they work (in production):
// every value sealed under a key with a history opens, and no demo money from npm start is kept unasked.
// The web lists the same in api/wiring.ts.
import { deliverySealedColumns } from '../shared/deliveries/secrets';
import { ballotSealedColumns } from '../shared/governance/ballot-key';
import { developmentSettlementIssues } from '../shared/payments/development';
import { env } from '../shared/platform/env';
import type { SealedColumn } from '../shared/platform/sealed-columns';
import { sealedKeyCheck } from '../shared/platform/startup-checks';
import type { DatabaseCheck } from '../shared/platform/startup-checks';

/** Every column sealed under SEALING_KEY or BALLOT_KEY. */
export const sealedColumns: readonly SealedColumn[] = [...deliverySealedColumns, ...ballotSealedColumns];

export const databaseChecks: readonly DatabaseCheck[] = [
  sealedKeyCheck(sealedColumns),
  (db) => developmentSettlementIssues(db, env),
];
