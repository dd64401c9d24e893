// The memory FinanceStore against the shared finance contract.
import { MemoryFinanceStore } from '../../src/finance/memory-finance-store.ts';
import { describeFinanceContract } from './finance-contract.ts';

describeFinanceContract('memory', async () => {
  const store = new MemoryFinanceStore();
  return {
    store,
    // The append step throws (as a full heap or a bug would), inside the synchronous write.
    breakAudit: async () => {
      (store as unknown as { append: () => never }).append = () => {
        throw new Error('injected audit fault');
      };
    },
    close: () => store.close(),
  };
});
