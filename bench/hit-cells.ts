// The cache-HIT cells the HIT benches load (cache-hits.ts, hit-ab.ts, hit-mixed.ts,
// hit-profile.ts, hit-instructions.ts): the 109 KB dossier as the client asks for it (identity,
// gzip, br) and the 1.3 KB bank record, each a path, an Accept-Encoding and the Content-Encoding
// the gateway answers with, in the order cache-hits.ts takes them. One list, so every bench
// loads the same requests.
// Must never: name a company or bank the emulator's fixtures lack.

/** The company and the bank every HIT cell reads (emulator fixtures). */
export const HIT_INN = '7707083893';
export const HIT_BIC = '044525225';

export interface HitCell {
  /** The cell's name in tables and results. */
  name: string;
  path: string;
  acceptEncoding: string;
  /** Content-Encoding the gateway answers with (null: none). */
  encoding: string | null;
}

export const HIT_CELLS: Readonly<Record<'identity' | 'gzip' | 'br' | 'bank', HitCell>> = {
  identity: {
    name: 'dossier, identity',
    path: `/v1/companies/${HIT_INN}`,
    acceptEncoding: 'identity',
    encoding: null,
  },
  gzip: { name: 'dossier, gzip', path: `/v1/companies/${HIT_INN}`, acceptEncoding: 'gzip', encoding: 'gzip' },
  br: { name: 'dossier, br', path: `/v1/companies/${HIT_INN}`, acceptEncoding: 'br', encoding: 'br' },
  bank: { name: 'bank record', path: `/v1/banks/${HIT_BIC}`, acceptEncoding: 'identity', encoding: null },
};

/** The cell a `--target` names (identity, gzip, br, bank), or undefined. */
export function hitCell(name: string): HitCell | undefined {
  return Object.hasOwn(HIT_CELLS, name) ? HIT_CELLS[name as keyof typeof HIT_CELLS] : undefined;
}
