// Stage: who is calling. Resolves the bearer token to an app and checks the route's scope.
// A refusal never reaches the upstream. Tokens are compared as SHA-256 hashes in constant time.
import { bearerToken, matchToken } from '../auth/tokens.ts';
import type { AppConfig } from '../config/schema.ts';
import { ApiError } from '../errors.ts';
import type { UpstreamRoute } from '../upstream-routes.ts';

export function authenticate(
  authorization: string | undefined,
  route: UpstreamRoute,
  apps: readonly AppConfig[],
): AppConfig | null {
  if (route.scope === 'public') return null;
  const token = bearerToken(authorization);
  const app = token ? matchToken(token, apps) : null;
  if (!app) throw new ApiError('unauthorized');
  if (route.scope !== null && !app.scopes.includes(route.scope)) {
    throw new ApiError(
      'feature_unavailable',
      { scope: route.scope },
      `This app lacks the scope ${route.scope}`,
    );
  }
  return app;
}
