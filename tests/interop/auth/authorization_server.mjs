// A real OAuth 2.1 authorization server for chapter 18's interop tests: oidc-provider
// (npm, pinned in ../package.json), configured for machines, not people: the
// client_credentials grant only, no login pages.
//
//   node authorization_server.mjs --resource http://127.0.0.1:PORT/mcp [--bind 127.0.0.1:0 | --port 0]
//
// (with the Node 22 of node_modules/.bin; --resource may be given more than once).
//
// First line on stdout, once it listens:  issuer http://127.0.0.1:PORT
// (the issuer exactly as its metadata and its tokens carry it). Stop it with SIGTERM.
//
// What it issues, at POST /token (client_secret_basic or client_secret_post):
//   grant_type=client_credentials&resource=R&scope=S
//   -> a JWT access token (RFC 9068: header typ "at+jwt", RS256, key at /jwks) whose
//      aud is R, sub and client_id the client's id, scope the granted part of S.
// R must be one of the --resource URLs or FOREIGN_RESOURCE below (another API, for the
// token-for-someone-else test); anything else is refused with invalid_target. Without
// `resource` there is no audience, and the token is opaque (useless to chapter 18).
//
// Clients (fixed test credentials, nothing secret about them):
//   workbook-client / workbook-secret   scopes mcp:read payroll:run, tokens live 600 s
//   workbook-brief  / workbook-secret   the same, but its tokens live 1 s (expiry test)

import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';

import Provider, { errors } from 'oidc-provider';

const FOREIGN_RESOURCE = 'http://127.0.0.1:9/other';
const SCOPES = ['mcp:read', 'payroll:run'];
const SECRET = 'workbook-secret';

function parseArgs(argv) {
  const options = { bind: '127.0.0.1:0', resources: [] };
  for (let i = 0; i < argv.length; i += 1) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--resource' && value) { options.resources.push(value); i += 1; }
    else if (flag === '--bind' && value) { options.bind = value; i += 1; }
    else if (flag === '--port' && value) { options.bind = `127.0.0.1:${value}`; i += 1; }
    else { console.error(`usage: authorization_server.mjs --resource URL... [--bind 127.0.0.1:PORT | --port PORT]; got ${flag}`); process.exit(2); }
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const [host, port] = [options.bind.slice(0, options.bind.lastIndexOf(':')), Number(options.bind.split(':').pop())];
const allowed = new Set([...options.resources, FOREIGN_RESOURCE]);

// The issuer is part of every token and of the metadata, so the port must be known before
// the provider exists: listen first (port 0 = any free one), then build the provider.
const server = createServer();
await new Promise((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
const issuer = `http://${host}:${server.address().port}`;

// A fresh signing key per run: the tokens of one run are only good for that run.
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'workbook-rs256', alg: 'RS256', use: 'sig' };

const client = (id) => ({
  client_id: id,
  client_secret: SECRET,
  grant_types: ['client_credentials'],
  response_types: [],        // no authorization endpoint use: machines only
  redirect_uris: [],
  scope: SCOPES.join(' '),   // the most this client may ask for
});

const provider = new Provider(issuer, {
  clients: [client('workbook-client'), client('workbook-brief')],
  jwks: { keys: [signingKey] },
  scopes: SCOPES,
  // Cookies only matter for browser logins, which this server does not do; fixed keys
  // keep oidc-provider from warning about its development defaults.
  cookies: { keys: ['workbook-interop-cookie-key'] },
  features: {
    devInteractions: { enabled: false },  // no login pages
    clientCredentials: { enabled: true },
    introspection: { enabled: false },
    revocation: { enabled: false },
    resourceIndicators: {
      enabled: true,
      // RFC 8707: who the token is for. Every known resource gets JWT access tokens
      // with that resource as `aud`; the scopes it understands are ours.
      async getResourceServerInfo(ctx, resource) {
        if (!allowed.has(resource)) throw new errors.InvalidTarget(`unknown resource ${resource}`);
        return {
          audience: resource,
          scope: SCOPES.join(' '),
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  ttl: {
    ClientCredentials: (ctx, token, c) => (c.clientId === 'workbook-brief' ? 1 : 600),
  },
});

// oidc-provider decides http vs https from the request; a loopback test server speaks
// plain http, and nothing here sits behind a TLS proxy, so no `proxy` setting is needed.
// Its one warning on stderr, about the in-memory adapter, is the point for a test server:
// every token and grant lives as long as this process and no longer.
// It also happily takes an http:// issuer (it only requires a web URI); a real
// deployment would use https and run with NODE_ENV=production.
provider.on('server_error', (ctx, err) => console.error('server_error', err));

// RFC 8414's well-known name: oidc-provider serves its metadata (a superset of RFC 8414's)
// only at /.well-known/openid-configuration; answer the same document at both.
const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url === '/.well-known/oauth-authorization-server') req.url = '/.well-known/openid-configuration';
  callback(req, res);
});

console.log(`issuer ${issuer}`);
console.log(`resources ${[...allowed].join(' ')}`);
console.log(`clients workbook-client workbook-brief (secret ${SECRET}), scopes ${SCOPES.join(' ')}`);

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => { server.close(() => process.exit(0)); server.closeAllConnections(); });
}
