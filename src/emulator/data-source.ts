// The shape the emulator needs from its data layer (src/emulator/data, written separately).
// Kept structural so tests can pass a small fake. Nothing here generates data.
import type { SearchKind, SectionName } from '../domain/requests.ts';

export type SectionAnswer = { kind: 'ok'; body: unknown } | { kind: 'bad_cursor' } | null;

export interface EmulatorDataSource {
  /** Parsed dossier (includes `found: true`), or null for an INN no register knows. */
  dossier(inn: string): unknown | null;
  /** The same dossier serialized once and memoized: the hot path sends it as is. */
  dossierJson(inn: string): string | null;
  section(inn: string, name: SectionName, cursor?: string): SectionAnswer;
  requisites(inn: string): unknown | null;
  bank(bic: string): unknown | null;
  person(inn: string): unknown | null;
  suggest(q: string): unknown[];
  /** The `data` object of a search answer. */
  search(q: string, kind: SearchKind, page: number): unknown;
  /** Builds indexes ahead of the first request, when the data layer offers it. */
  warm?(): void;
}
