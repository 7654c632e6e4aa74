// The public address of each route table: A at BASE_URL; B at API_URL and C at SITE_URL, each at
// BASE_URL unless it has its own. One rule for the app's links and documents and for the start banner.

export interface TableBases {
  base: string | undefined;
  api: string | undefined;
  site: string | undefined;
}

export function tableBases(c: { BASE_URL?: string; API_URL?: string; SITE_URL?: string }): TableBases {
  return { base: c.BASE_URL, api: c.API_URL ?? c.BASE_URL, site: c.SITE_URL ?? c.BASE_URL };
}
