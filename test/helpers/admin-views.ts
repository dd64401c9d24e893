// The shapes of the admin and emulator answers the money tests read (GET /admin/ledger,
// /admin/budgets, the emulator's ledger), as those tests use them.

export interface AdminLedger {
  count: number;
  total_minor: number;
  entries: Array<{ inn: string; amount_minor: number; reconciled?: boolean }>;
  pending: unknown[];
  outbox: number;
}
export interface AdminBudgets {
  budgets: Record<string, Array<{ period: string; spent_minor: number; reserved_minor: number }>>;
}
export interface EmulatorLedger {
  entries: Array<{ inn: string; amount_minor: number }>;
  totals: { count: number; amount_minor: number };
}
