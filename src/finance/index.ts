// Finance at run time: budget overrides and the audit trail (issue 29). See finance-store.ts.
export * from './budget-overrides.ts';
export * from './create-finance-store.ts';
export * from './finance-store.ts';
export * from './memory-finance-store.ts';
export * from './redis-finance-store.ts';
