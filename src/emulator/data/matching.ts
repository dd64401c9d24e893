// Text matching shared by suggest and search: case-insensitive, ё = е, names split into
// words at anything that is not a letter or digit (so "АЛЬФА-БАНК" is two words). Letters
// match when every query word starts a name word, in order; Latin never matches Cyrillic
// and a merged spelling ("альфабанк") does not match a hyphenated name.
export function normalize(text: string): string {
  return text.toLowerCase().replaceAll('ё', 'е');
}

export function words(text: string): string[] {
  return normalize(text)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length > 0);
}

/** True when each query word is the start of a name word, the name words in order. */
export function matchesWordStarts(queryWords: readonly string[], nameWords: readonly string[]): boolean {
  if (queryWords.length === 0) return false;
  let j = 0;
  for (const q of queryWords) {
    while (j < nameWords.length && !nameWords[j]!.startsWith(q)) j++;
    if (j === nameWords.length) return false;
    j++;
  }
  return true;
}

/** A digits-only query (spaces allowed around), or null. */
export function digitsQuery(q: string): string | null {
  const t = q.trim();
  return /^\d+$/.test(t) ? t : null;
}
