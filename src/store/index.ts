// The store package's public surface: the interface, both backends and the factory.
export { type CreateStoreOptions, createStore } from './create-store.ts';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.ts';
export { innTag } from './redis-keys.ts';
export { RedisStore, type RedisStoreOptions } from './redis-store.ts';
export * from './store.ts';
