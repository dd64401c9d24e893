// The memory FinanceStore against the shared finance contract.
import { MemoryFinanceStore } from '../../src/finance/memory-finance-store.ts';
import { describeFinanceContract } from './finance-contract.ts';

describeFinanceContract('memory', async () => {
  const store = new MemoryFinanceStore();
  return { store, close: () => store.close() };
});
