// What `npm start` prints once every process is ready: where to go, each address under the base of its
// route table (A at BASE_URL, B at API_URL, C and the pages at SITE_URL; B and C at BASE_URL when they
// have none of their own, as the app serves them), and the local development chain when one runs. The
// README shows it verbatim.
import { tableBases } from '../../shared/platform/urls';

export interface BannerInput {
  port: number;
  baseUrl?: string;
  apiUrl?: string;
  siteUrl?: string;
  /** The file holding the development operator token; unset when OPERATOR_TOKEN was given. */
  tokenFile?: string;
  /** The local development chain, when npm start runs one. */
  devnet?: { rpcUrl: string; payerKeyFile: string };
}

export function banner(b: BannerInput): string[] {
  const local = `http://localhost:${b.port}`;
  const at = (url: string | undefined) => (url ?? local).replace(/\/+$/, '');
  const bases = tableBases({ BASE_URL: b.baseUrl, API_URL: b.apiUrl, SITE_URL: b.siteUrl });
  const [base, api, site] = [at(bases.base), at(bases.api), at(bases.site)];
  const rows: Array<[string, string, string?]> = [
    ['home', `${site}/`],
    ['verify a proof', `${site}/proof-workflows/verify/`],
    ['agent exchange', `${base}/api/services`],
    ['API docs', `${base}/docs`],
    ['health', `${base}/api/health`],
    ['readiness', `${api}/api/v1/readiness`],
    ['Bull Board', `${local}/admin/queues`, 'user: anything, password: the operator token'],
    ['operator token', b.tokenFile ? `cat ${b.tokenFile}` : 'the OPERATOR_TOKEN you set'],
    ...(b.devnet
      ? ([
          ['dev chain', b.devnet.rpcUrl, 'local development chain: demo money, never production'],
          [
            'pay for a job',
            'npm run demo:pay -- <job id> <job token>',
            `demo payer key in ${b.devnet.payerKeyFile}`,
          ],
        ] as Array<[string, string, string]>)
      : []),
  ];
  return [
    'proof-exchange is running',
    ...rows.map(([label, where, note]) => `  ${label.padEnd(16)}${where}${note ? `   (${note})` : ''}`),
    'Ctrl-C stops everything; a second Ctrl-C forces.',
  ];
}
