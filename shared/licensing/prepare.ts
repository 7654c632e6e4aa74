// Preparing a license checkout: a paid tier gets a locked quote in one asset, a TRIAL its license at
// once. A checkout opens with its client secret (cs_…, returned once here) and nothing else: its id
// is a name.
import { DatabaseError } from 'pg';
import type { AssetId } from '../chains/assets';
import type { AmountHolder } from '../payments/amount-holds';
import { bindQuote, prepareBinding } from '../payments/binding';
import { BindingUnavailable } from '../payments/binding-kinds';
import { assetAvailability } from '../payments/availability';
import { QuoteError, createQuote } from '../payments/pricing';
import type { RateSource } from '../payments/pricing';
import { lateWindowMs } from '../payments/verdict';
import { newCapability } from '../platform/capabilities';
import type { Db } from '../platform/db/knex';
import { env } from '../platform/env';
import { AppError, conflict, unprocessable, validationFailed } from '../platform/errors';
import { newId } from '../platform/ids';
import { issueLicense, licenseSealKey } from './licenses';
import type { IssuedLicense } from './licenses';
import { normalizeOrganization } from './organizations';
import type { CheckoutRow } from './rows';
import { findTier } from './tiers';
import type { LicenseType } from './tiers';
import { checkTrialAddress, checkTrialSignature, spendTrialChallenge } from './trials';
import type { TrialProof } from './trials';

const isUniqueViolation = (err: unknown, constraint?: string) =>
  err instanceof DatabaseError && err.code === '23505' && (!constraint || err.constraint === constraint);

export interface PrepareCheckoutInput {
  license: LicenseType;
  asset?: AssetId | undefined;
  organization: string;
  email: string;
  /** TRIAL only: the wallet's signature over a trial challenge, and who asks (an address key). */
  trial?: { proof: TrialProof; addressKey: string; perAddressPerDay: number } | undefined;
  /** Paid tiers: whose budget the quote's unique amount is held on. */
  holder: AmountHolder;
}

export interface PreparedCheckout {
  checkout: CheckoutRow;
  /** The client secret (cs_…): shown once, in the prepare reply; only its hash is stored. */
  clientSecret: string;
  /** A TRIAL's license, issued at once, and its key. */
  issued?: IssuedLicense;
}

function trialUsed(): AppError {
  return conflict(
    'trial_already_used',
    'This organization or wallet has already had its trial; choose a paid license (Starter, Business or Enterprise).',
  );
}

/**
 * A paid license gets a checkout with a locked quote in the chosen asset; a TRIAL is issued at once,
 * once per normalized organization name (the unique index decides a race).
 */
export async function prepareCheckout(
  db: Db,
  input: PrepareCheckoutInput,
  opts: { now?: Date; rates?: RateSource } = {},
): Promise<PreparedCheckout> {
  const now = opts.now ?? new Date();
  const organizationKey = normalizeOrganization(input.organization);
  if (!organizationKey) {
    throw validationFailed([{ path: 'body.organization', message: 'needs at least one letter or digit' }]);
  }
  const tier = findTier(input.license);
  if (!tier) throw validationFailed([{ path: 'body.license', message: 'unknown license type' }]);
  const secret = newCapability('checkout');
  const base = {
    license_type: input.license,
    organization: input.organization.trim(),
    organization_key: organizationKey,
    email: input.email,
    usd_cents: tier.priceUsdCents,
    client_secret_hash: secret.hash,
    license_seal_key: licenseSealKey(secret.token),
    created_at: now,
    updated_at: now,
  };

  if (input.license === 'TRIAL') {
    const trial = input.trial;
    if (!trial) {
      throw validationFailed(
        ['wallet', 'challenge', 'signature'].map((f) => ({
          path: `body.${f}`,
          message:
            'a TRIAL is claimed with a wallet signature over a challenge from POST /api/v1/commercial/trial/challenge',
        })),
      );
    }
    checkTrialSignature(trial.proof);
    try {
      return await db.transaction(async (trx) => {
        await checkTrialAddress(trx, trial.addressKey, trial.perAddressPerDay, now);
        await spendTrialChallenge(trx, trial.proof, now);
        const used = await trx('licenses')
          .where({ organization_key: organizationKey, tier: 'TRIAL' })
          .first('id');
        const walletUsed = await trx('trial_claims').where({ wallet: trial.proof.wallet }).first('wallet');
        if (used || walletUsed) throw trialUsed();
        const [checkout] = (await trx('checkouts')
          .insert({
            id: newId('chk'),
            ...base,
            status: 'confirmed',
            settlement: 'trial',
            settled_at: now,
          })
          .returning('*')) as CheckoutRow[];
        await trx('trial_claims').insert({
          checkout_id: checkout!.id,
          wallet: trial.proof.wallet,
          address_key: trial.addressKey,
          created_at: now,
        });
        const { license, token } = await issueLicense(trx, checkout!, now);
        return { checkout: checkout!, clientSecret: secret.token, issued: { license, token } };
      });
    } catch (err) {
      if (
        isUniqueViolation(err, 'licenses_one_trial_per_organization') ||
        isUniqueViolation(err, 'trial_claims_wallet_unique')
      )
        throw trialUsed();
      throw err;
    }
  }

  if (!input.asset) {
    throw unprocessable('asset_required', 'A paid license needs the asset you will pay in.');
  }
  const status = (await assetAvailability()).find((s) => s.asset.id === input.asset);
  if (!status) throw validationFailed([{ path: 'body.asset', message: 'unknown asset' }]);
  if (!status.enabled) {
    throw unprocessable('asset_unavailable', `${input.asset} cannot be paid in now: ${status.detail}`, {
      reason: status.reason,
    });
  }
  const id = newId('chk');
  let quote;
  try {
    quote = await createQuote({
      asset: status.asset,
      usdCents: tier.priceUsdCents,
      now,
      reference: id,
      ...(opts.rates ? { rates: opts.rates } : {}),
    });
  } catch (err) {
    if (!(err instanceof QuoteError)) throw err;
    if (err.code === 'rate_unavailable' || err.code === 'rate_stale') {
      throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '60' } });
    }
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  let pre;
  try {
    pre = await prepareBinding(status.asset, id);
  } catch (err) {
    if (!(err instanceof BindingUnavailable)) throw err;
    throw unprocessable('asset_unavailable', err.message, { reason: err.code });
  }
  const expiresAt = new Date(quote.expiresAt);
  const checkout = await db.transaction(async (trx) => {
    let bound;
    try {
      bound = await bindQuote(trx, {
        owner: id,
        holder: input.holder,
        quote,
        asset: status.asset,
        pre,
        openUntil: new Date(expiresAt.getTime() + lateWindowMs(env)),
        now,
      });
    } catch (err) {
      if (!(err instanceof BindingUnavailable)) throw err;
      throw new AppError(503, err.code, err.message, { headers: { 'Retry-After': '30' } });
    }
    const [row] = (await trx('checkouts')
      .insert({
        id,
        ...base,
        asset: quote.asset,
        network: quote.network,
        decimals: quote.decimals,
        contract: quote.contract ?? null,
        base_amount: quote.amount,
        ...bound,
        rate: quote.rate ? JSON.stringify(quote.rate) : null,
        status: 'awaiting_payment',
        expires_at: expiresAt,
      })
      .returning('*')) as CheckoutRow[];
    return row!;
  });
  return { checkout, clientSecret: secret.token };
}
