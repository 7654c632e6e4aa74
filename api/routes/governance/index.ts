// The governance line's routes (the site table), in the documents' order: rooms and membership, identities,
// proposals and ballots, trustees and their decryptions, verification.
import type { RouteTable } from '../../http/route';
import { identityRoutes } from './identities';
import { proposalRoutes } from './proposals';
import { roomRoutes } from './rooms';
import { trusteeRoutes } from './trustees';
import { verifyRoutes } from './verify';

export function governanceRoutes(table: RouteTable): RouteTable {
  return verifyRoutes(trusteeRoutes(proposalRoutes(identityRoutes(roomRoutes(table)))));
}
