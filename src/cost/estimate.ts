// Pre-flight estimates (DESIGN.md "Cost rules"): what a call will cost the account before it
// is made. Dossier or section: free inside a dossier window, else the dossier price.
// Requisites: free inside any window, else the requisites price. Check: the check price (the
// requisites price for purpose requisites). Person: the person price. Everything else: 0.
// How each route is billed is stated once, in the route table (src/route-table.ts).
import {
  type ChargeShape,
  type IncomingCall,
  type PriceKind,
  type RouteName,
  routeSpec,
} from '../route-table.ts';

export type { ChargeShape, PriceKind };

/** How the upstream bills this call; null for a free route. */
export function chargeShape(route: RouteName, call: IncomingCall): ChargeShape | null {
  return routeSpec(route).charge?.(call) ?? null;
}

/** The estimate in kopecks; `covered` tells whether an open window makes the call free. */
export function estimateMinor(
  shape: ChargeShape | null,
  covered: boolean,
  price: (kind: PriceKind) => number | null,
): number {
  if (shape === null) return 0;
  if (shape.covered !== null && covered) return 0;
  return price(shape.kind) ?? 0;
}
