// Paging of long sections: 100 items a page (the public analog), opaque cursors that are
// base64url of "v1:<inn>:<section>:<offset>". A cursor is valid only for its company and
// section and only at a real page boundary; anything else is a bad cursor.
import type { SectionPage } from './types.ts';

export const PAGE_SIZE = 100;

export function encodeCursor(inn: string, section: string, offset: number): string {
  return Buffer.from(`v1:${inn}:${section}:${offset}`, 'utf8').toString('base64url');
}

/** Offset the cursor points at, or null when it is not a cursor of this section. */
export function decodeCursor(cursor: string, inn: string, section: string, total: number): number | null {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const m = /^v1:(\d{10}|\d{12}):([a-z_]+):(\d{1,7})$/.exec(text);
  if (!m || m[1] !== inn || m[2] !== section) return null;
  const offset = Number(m[3]);
  if (offset <= 0 || offset % PAGE_SIZE !== 0 || offset >= total) return null;
  if (encodeCursor(inn, section, offset) !== cursor) return null;
  return offset;
}

/** The page a cursor selects ('' or undefined = first), or null for a bad cursor. */
export function pageOf<T>(
  items: readonly T[],
  inn: string,
  section: string,
  cursor?: string,
): SectionPage<T> | null {
  let offset = 0;
  if (cursor) {
    const decoded = decodeCursor(cursor, inn, section, items.length);
    if (decoded === null) return null;
    offset = decoded;
  }
  const next = offset + PAGE_SIZE;
  return {
    items: items.slice(offset, next),
    cursor: next < items.length ? encodeCursor(inn, section, next) : '',
  };
}
