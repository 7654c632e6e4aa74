// The typed client of the service, for programs of their own: openapi-fetch over the types
// openapi-typescript generated from the two documents the service serves (`npm run client:generate`),
// the wallet signatures, commitments and sealed bids each flow needs (./crypto.ts), and the voter's and
// approver's clients for anonymous ballots and approvals (identities, Groth16 membership proofs made on
// the member's machine). A call answers { data } or { error } (the problem+json), typed by its operation.
//
//   const px = pxClient({ url: 'http://localhost:3000', token: 'lk_…' });
//   const { data, error } = await px.platform.POST('/api/governance/rooms', { body: { name: 'Board' } });
//   await px.platform.POST('/api/governance/proposals/{proposalId}/review', {
//     params: { path: { proposalId } },
//     body: proposalReview(wallet, proposalId, 'approve'),
//   });
export * from './crypto';
export * from './http';
/** Anonymous ballots: identities, ballots proved and encrypted here, submitted (`npm run ballot`). */
export * as ballots from '../../shared/governance/ballot-client';
/** Anonymous workflow approvals: membership proofs made here, submitted (`npm run approve`). */
export * as approvals from '../../shared/workflows/approval-client';
