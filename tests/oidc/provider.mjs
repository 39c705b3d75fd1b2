// A real OAuth 2.1 / OpenID Connect authorization server for the gateway's tests
// (tests/gateway_oauth.rs, through tests/common/oidc.rs): `oidc-provider` on loopback, JWT access
// tokens for one resource (resource indicators), a client-credentials client per scope set for
// the assistant, an authorization-code + PKCE client for the approval page, and its development
// login form for a person.
//
//   node provider.mjs keys FILE                 write a fresh private JWKS (RS256 + ES256 keys)
//   node provider.mjs mint FILE CLAIMS_JSON     print a JWT access token signed with FILE's ES256 key
//   node provider.mjs serve CONFIG_JSON         serve; prints "listening PORT" once ready
//
// FACTORY_MCP_OIDC_DIR names the directory oidc-provider was installed into (npm --prefix).
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';

const dir = process.env.FACTORY_MCP_OIDC_DIR;
if (!dir) {
  console.error('FACTORY_MCP_OIDC_DIR is not set');
  process.exit(2);
}
const load = (p) => import(pathToFileURL(join(dir, 'node_modules', p)).href);
const jose = await load('jose/dist/webapi/index.js');

const [mode, ...args] = process.argv.slice(2);

if (mode === 'keys') {
  const keys = [];
  for (const alg of ['RS256', 'ES256']) {
    const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
    const jwk = await jose.exportJWK(privateKey);
    keys.push({ ...jwk, kid: `${alg.toLowerCase()}-${randomUUID()}`, alg, use: 'sig' });
  }
  writeFileSync(`${args[0]}.tmp`, JSON.stringify({ keys }));
  renameSync(`${args[0]}.tmp`, args[0]);
} else if (mode === 'mint') {
  const { keys } = JSON.parse(readFileSync(args[0], 'utf8'));
  const jwk = keys.find((k) => k.alg === 'ES256');
  const key = await jose.importJWK(jwk, 'ES256');
  const claims = JSON.parse(args[1]);
  const token = await new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
    .sign(key);
  process.stdout.write(`${token}\n`);
} else if (mode === 'serve') {
  const config = JSON.parse(args[0]);
  const { default: Provider } = await load('oidc-provider/lib/index.js');
  const jwks = JSON.parse(readFileSync(config.jwks, 'utf8'));
  const resource = config.resource;
  const all = 'factory:read factory:launch factory:approve';
  const server = createServer();
  await new Promise((ok) => server.listen(config.port ?? 0, '127.0.0.1', ok));
  const port = server.address().port;
  const issuer = `http://127.0.0.1:${port}`;
  const secretClient = (id, scope) => ({
    client_id: id,
    client_secret: `${id}-secret`,
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope,
  });
  const provider = new Provider(issuer, {
    clients: [
      secretClient('assistant', 'factory:read factory:launch'),
      secretClient('reader', 'factory:read'),
      secretClient('outsider', 'openid'),
      secretClient('approver-bot', all),
      {
        // The approval page's sign-in: a public client (PKCE, no secret).
        client_id: 'page',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: config.redirect_uris ?? [],
        scope: `openid ${all}`,
      },
    ],
    jwks,
    scopes: ['openid', ...all.split(' ')],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          // A person whose login name starts with "viewer" never gets the approving scope
          // (at the authorization, once signed in, and at the token endpoint).
          let account = ctx.oidc.entities?.AuthorizationCode?.accountId ?? '';
          try {
            account ||= ctx.oidc.session?.accountId ?? '';
          } catch {
            // no session at this endpoint
          }
          const scope = account.startsWith('viewer') ? 'factory:read factory:launch' : all;
          return {
            scope,
            audience: indicator,
            accessTokenTTL: 600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  server.on('request', provider.callback());
  process.stdout.write(`listening ${port}\n`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // The test holds our stdin; when it goes away (the test died), so do we.
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
} else {
  console.error('usage: provider.mjs keys FILE | mint FILE CLAIMS_JSON | serve CONFIG_JSON');
  process.exit(2);
}
