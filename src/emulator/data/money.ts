// Money in company data: rubles with kopecks as a string ("1234567.89"), built with BigInt
// so no digit is lost on huge sums. Reporting is generated in thousands of rubles and
// converted to rubles here, so the dossier has one unit throughout.

/** Kopecks (bigint) to a ruble string with two decimals, sign kept. */
export function rublesFromKopecks(kopecks: bigint): string {
  const negative = kopecks < 0n;
  const abs = negative ? -kopecks : kopecks;
  const rubles = abs / 100n;
  const kop = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}${rubles}.${kop}`;
}

/** Thousands of rubles (as published in reporting) to a ruble string. */
export function rublesFromThousands(thousands: bigint): string {
  return rublesFromKopecks(thousands * 100_000n);
}

export const RUBLE_STRING = /^-?\d+\.\d{2}$/;
