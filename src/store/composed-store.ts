// A Store assembled from one object per role: each backend keeps its roles as separate small
// classes (sharing a connection or memory maps) and this base class exposes their methods, bound,
// as one Store. The list of methods is ROLE_METHODS (store.ts), so a role method that is not
// listed does not compile, and a role object lacking one fails at construction.
//
// Must never: add behaviour of its own between a caller and a role (it only forwards).
import { ROLE_METHODS, type Store, type StoreRoles } from './store.ts';

// The role methods are bound in the constructor; this interface only declares them.
export interface ComposedStore extends Store {}
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the role methods are bound in the constructor
export abstract class ComposedStore {
  constructor(roles: StoreRoles) {
    for (const role of Object.keys(ROLE_METHODS) as (keyof StoreRoles)[]) {
      const impl = roles[role] as unknown as Record<string, (...args: unknown[]) => unknown>;
      for (const method of ROLE_METHODS[role]) {
        const fn = impl[method];
        if (typeof fn !== 'function') throw new TypeError(`store role ${role} lacks ${method}`);
        Object.defineProperty(this, method, { value: fn.bind(impl), writable: true, configurable: true });
      }
    }
  }
}
