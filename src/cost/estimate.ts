// Pre-flight estimates (DESIGN.md "Cost rules"): what a call will cost the account before it
// is made. Dossier or section: free inside a dossier window, else the dossier price.
// Requisites: free inside any window, else the requisites price. Check: the check price (the
// requisites price for purpose requisites). Person: the person price. Everything else: 0.
import type { RouteName } from '../upstream-routes.ts';
import type { WindowKind } from './window-tracker.ts';

export type PriceKind = 'dossier' | 'requisites' | 'check' | 'person';

export interface ChargeShape {
  /** Which price applies when the call is charged; null for free routes. */
  kind: PriceKind | null;
  /** The INN the charge is for. */
  inn: string | null;
  /** The window this call needs to be free (null: never windowed). */
  covered: WindowKind | null;
  /** The window a charge opens (checks open theirs when data is ready). */
  opens: WindowKind | null;
}

export function chargeShape(route: RouteName, params: Record<string, string>, body: unknown): ChargeShape {
  switch (route) {
    case 'company':
    case 'section':
      return { kind: 'dossier', inn: params.inn!, covered: 'dossier', opens: 'dossier' };
    case 'requisites':
      return { kind: 'requisites', inn: params.inn!, covered: 'requisites', opens: 'requisites' };
    case 'check_create': {
      const b = body as { inn: string; purpose?: string };
      const requisites = b.purpose === 'requisites';
      return {
        kind: requisites ? 'requisites' : 'check',
        inn: b.inn,
        covered: null,
        opens: requisites ? 'requisites' : 'dossier',
      };
    }
    case 'person':
      return { kind: 'person', inn: params.inn!, covered: null, opens: null };
    default:
      return { kind: null, inn: null, covered: null, opens: null };
  }
}

/** The estimate in kopecks; `covered` tells whether an open window makes the call free. */
export function estimateMinor(
  shape: ChargeShape,
  covered: boolean,
  price: (kind: PriceKind) => number | null,
): number {
  if (shape.kind === null) return 0;
  if (shape.covered !== null && covered) return 0;
  return price(shape.kind) ?? 0;
}
