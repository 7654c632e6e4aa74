// The signed messages of treasury requests. Pure: an approver recomputes each of them offline with
// nothing but their own inputs.

/** What an approver signs: the request's canonical hash, so an approval cannot be moved to other terms. */
export const approvalMessage = (
  requestId: string,
  requestHash: string,
  decision: 'approve' | 'reject',
): string =>
  `proof-exchange/treasury/approval/v1\nrequest:${requestId}\nrequestHash:${requestHash}\ndecision:${decision}`;
