// An address with nothing there: a browser gets a page (the site's frame, the address, where to go), an
// API client the RFC 9457 problem it always got, and the API's own paths are problems whoever asks.
import { afterAll, describe, expect, it } from 'vitest';
import { testApp } from '../helpers';

const app = testApp();
afterAll(() => app.close());

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('a miss', () => {
  it('is a page for a browser, under the pages’ policy, naming the address and linking home', async () => {
    const res = await app.request.get('/no/such/page').set('Accept', BROWSER).expect(404);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('<code>/no/such/page</code>');
    expect(res.text).toContain('href="/"');
    // What the address held is escaped, never markup.
    const odd = await app.request.get('/%3Cscript%3Ex').set('Accept', BROWSER).expect(404);
    expect(odd.text).not.toContain('<script>x');
  });

  it('is problem+json for an API client, and on the API’s paths for anyone', async () => {
    for (const [path, accept] of [
      ['/no/such/page', 'application/json'],
      ['/no/such/page', '*/*'],
      ['/api/no-such-route', BROWSER],
      ['/a2a/nothing', BROWSER],
      ['/.well-known/nothing', BROWSER],
    ] as const) {
      const res = await app.request.get(path).set('Accept', accept).expect(404);
      expect(res.headers['content-type'], `${path} ${accept}`).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('not_found');
    }
    const post = await app.request.post('/no/such/page').set('Accept', BROWSER).send({}).expect(404);
    expect(post.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
