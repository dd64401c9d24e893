// Stage: who is calling. Resolves the bearer token to an app and checks the route's scope.
// A refusal never reaches the upstream. Tokens are looked up by SHA-256 hash (auth/tokens.ts
// lookupToken, shared with the hit path).
import { bearerToken, lookupToken } from '../../auth/tokens.ts';
import type { PipelineDeps } from '../deps.ts';
import { refuse } from '../refusals.ts';
import type { StageFactory } from '../stage.ts';

/** What this stage uses of PipelineDeps. */
export type AuthenticateDeps = Pick<PipelineDeps, 'config'>;

export const authenticate: StageFactory<AuthenticateDeps> = (deps) => async (ctx, next) => {
  const { route } = ctx;
  if (route.scope === 'public') return next();
  const auth = ctx.headers.authorization;
  const token = bearerToken(Array.isArray(auth) ? auth[0] : auth);
  const app = token ? lookupToken(token, deps.config.apps) : null;
  if (!app) return refuse('unauthorized');
  if (route.scope !== null && !app.scopes.includes(route.scope)) {
    return refuse('feature_unavailable', { scope: route.scope }, `This app lacks the scope ${route.scope}`);
  }
  ctx.app = app;
  return next();
};
