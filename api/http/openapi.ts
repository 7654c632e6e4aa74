// OpenAPI 3.1.0 documents generated from the route tables' zod schemas.
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { RouteTable } from './route';

export function buildDocument(
  tables: RouteTable[],
  info: { title: string; version: string; description: string },
  serverUrl?: string,
) {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'operatorToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token (OPERATOR_TOKEN)',
  });
  registry.registerComponent('securitySchemes', 'agentKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'An agent API key (ak_…) from registerAgent',
  });
  registry.registerComponent('securitySchemes', 'licenseKey', {
    type: 'http',
    scheme: 'bearer',
    description: 'A license key (lk_…) from a confirmed checkout',
  });
  for (const t of tables) t.registerOpenApi(registry);
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info,
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
  });
}
