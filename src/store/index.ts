// The store package's public surface: the role interfaces, both backends and the factory.
export { ComposedStore } from './composed-store.ts';
export { type CreateStoreOptions, createStore } from './create-store.ts';
export { MemoryStore, type MemoryStoreOptions } from './memory/memory-store.ts';
export { innTag } from './redis/keys.ts';
export { RedisStore, type RedisStoreOptions } from './redis/redis-store.ts';
export * from './store.ts';
