// Endpoint authentication of the subscription form (API.md §14): auth
// (bearer, basic, OAuth 2.0 client credentials) and mutual TLS. The API
// shows every write-only secret as "***" and never the secret itself; the
// form leaves a secret field empty, and an empty field whose secret is
// stored sends "***" back, which keeps it.

export const MASK = '***';

/** stored reports whether the stored object (as the API shows it) holds field. */
function stored(obj, field) {
  return !!obj && obj[field] === MASK;
}

/**
 * authBody builds the request's `auth` from the form's values v (strings:
 * type, token, username, password, tokenUrl, clientId, clientSecret,
 * scopes, audience) and the stored auth (null when none): null for no
 * auth, and "***" for an empty secret field whose secret is stored under
 * the same type (the API answers any other empty one with its pointer).
 */
export function authBody(v, storedAuth) {
  const same = storedAuth && storedAuth.type === v.type ? storedAuth : null;
  const secret = (field) => (v[field] !== '' ? v[field] : stored(same, field) ? MASK : '');
  switch (v.type) {
    case 'bearer':
      return { type: 'bearer', token: secret('token') };
    case 'basic':
      return { type: 'basic', username: v.username.trim(), password: secret('password') };
    case 'oauth2': {
      const a = { type: 'oauth2', tokenUrl: v.tokenUrl.trim(), clientId: v.clientId.trim(), clientSecret: secret('clientSecret') };
      const scopes = v.scopes.split(/[\s,]+/).filter(Boolean);
      if (scopes.length) a.scopes = scopes;
      if (v.audience.trim()) a.audience = v.audience.trim();
      return a;
    }
    default:
      return null;
  }
}

/**
 * tlsBody builds the request's `tls` from the form's PEM texts v
 * (clientCertificate, clientKey, caCertificate) and the stored tls: null
 * when all are empty; an empty key with a certificate keeps the stored key.
 */
export function tlsBody(v, storedTLS) {
  const cert = v.clientCertificate.trim();
  const ca = v.caCertificate.trim();
  let key = v.clientKey.trim();
  if (!key && cert && stored(storedTLS, 'clientKey')) key = MASK;
  if (!cert && !key && !ca) return null;
  const t = {};
  if (cert) t.clientCertificate = cert;
  if (key) t.clientKey = key;
  if (ca) t.caCertificate = ca;
  return t;
}
